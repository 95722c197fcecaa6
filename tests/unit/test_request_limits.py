"""One body limit for every route, enforced before the body is read, and limits on forms:
how many fields, how large each, and no file parts; a bulk post decoded element by element
(bounded work past the bulk limit) in a worker thread."""

from __future__ import annotations

import asyncio
import json
from contextlib import contextmanager
from types import SimpleNamespace
from unittest.mock import patch

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from grader.api import bodies, intake
from grader.api.app import create_app
from grader.api.bodies import ObjectTooLarge, TooManyItems, parse_body, too_many_in_prefix
from grader.api.keys import new_key
from grader.config import JudgeSettings, LimitSettings, PageSettings, ServiceSettings, Settings
from grader.service.dispatch import InlineDispatcher
from grader.service.exams import Graders
from grader.service.store import Store
from tests.conftest import RUBRICS

LIMIT = 64 * 1024
FORM_LIMIT = 16 * 1024
ROUTES = [
    "/instructor/login",
    "/instructor/logout",
    "/instructor/answers/1/score",
    "/v1/submissions",
    "/v1/exams",  # no POST here: still never read
    "/nowhere",
]


@pytest.fixture(scope="module")
def app_and_key(tmp_path_factory):
    folder = tmp_path_factory.mktemp("limits")
    settings = Settings(
        service=ServiceSettings(
            database_url=f"sqlite:///{folder / 'grader.db'}",
            banks=[RUBRICS / "grad_accum_engineer.yaml"],
        ),
        judge=JudgeSettings(backend="scripted"),
        limits=LimitSettings(max_body_bytes=LIMIT, max_form_bytes=FORM_LIMIT),
    )
    store = Store(settings.service.database_url)
    store.migrate()
    key = new_key()
    store.accounts.add_platform("a", ["grad_accum_engineer"], key.key_id, key.key_hash, "s")
    graders = Graders.load(settings)
    dispatcher = InlineDispatcher(settings, store, graders, poll_s=0.05)
    yield create_app(settings, store, graders.exams, dispatcher), key.key
    dispatcher.close()


@pytest.fixture(scope="module")
def client(app_and_key):
    with TestClient(app_and_key[0]) as c:
        yield c


def post_streamed(app, path: str, body: Upload, headers: dict[str, str]) -> tuple[int, str]:
    """POST ``body`` to the ASGI app one chunk per ``receive`` (TestClient would read it all
    first): what the server pulls is what ``body.pulled`` counts."""
    chunks = iter(body)
    sent: list[dict] = []

    async def receive():
        chunk = next(chunks, None)
        return {"type": "http.request", "body": chunk or b"", "more_body": chunk is not None}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 5000), "server": ("testserver", 80),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }  # fmt: skip
    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    text = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, text.decode()


class Upload:
    """A 64 MiB body that counts how much of it the server pulled."""

    def __init__(self, total: int = 64 * 1024 * 1024, chunk: int = 64 * 1024):
        self.total, self.chunk, self.pulled = total, chunk, 0

    def __iter__(self):
        while self.pulled < self.total:
            self.pulled += self.chunk
            yield b"x" * self.chunk


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_an_oversize_body_is_refused_before_it_is_read(app_and_key, route, declared):
    body = Upload()
    headers = {"Content-Type": "multipart/form-data; boundary=x"}
    if declared:
        headers["Content-Length"] = str(body.total)
    status, text = post_streamed(app_and_key[0], route, body, headers)
    # declared: nothing read at all; streamed: no more than the limit and one chunk
    assert body.pulled <= (0 if declared else FORM_LIMIT + body.chunk)
    if declared or route == "/instructor/login":  # the others refuse before reading (401, 404)
        assert status == 413, text[:200]
        assert json.loads(text)["detail"] == f"request body over {FORM_LIMIT} bytes"


def test_json_bodies_have_the_larger_limit(app_and_key):
    app, key = app_and_key
    body = Upload()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    status, text = post_streamed(app, "/v1/submissions", body, headers)
    assert status == 413 and json.loads(text)["detail"] == f"request body over {LIMIT} bytes"
    assert body.pulled <= LIMIT + body.chunk


@pytest.mark.parametrize(
    ("name", "request_kwargs", "status"),
    [
        ("a file part", {"files": {"key": ("key.txt", b"ik_x_y")}}, 400),
        ("too many fields", {"data": {f"f{i}": "1" for i in range(200)}}, 400),
        ("a field too large", {"data": {"key": "k" * 9000}}, 400),
        ("too many multipart fields",
         {"files": {f"f{i}": (None, b"1") for i in range(129)}}, 400),
    ],
)  # fmt: skip
def test_forms_refuse_files_too_many_fields_and_large_fields(client, name, request_kwargs, status):
    response = client.post("/instructor/login", **request_kwargs)
    assert response.status_code == status, (name, response.text[:200])


def test_an_ordinary_login_form_still_works(client):
    response = client.post("/instructor/login", data={"key": "ik_0123456789abcdef_x"})
    assert response.status_code == 401 and "not a valid key" in response.text


# --- a bulk post is decoded element by element, off the event loop ---------------------------


@pytest.mark.parametrize(
    "text",
    ['{"id": "a"}', "[]", " [ ] ", '[{"a": 1}, 2, "x" ,[3]]\n', '\ufeff[{"a": "é"}]', "7", "null"],
)
def test_a_body_reads_as_json_loads_reads_it(text):
    body = text.encode()  # a leading U+FEFF is the UTF-8 byte order mark
    assert parse_body(body, 10) == json.loads(body)


@pytest.mark.parametrize("text", ["[", "[1,]", "[1 2]", "[1] x", "[,1]", "{", "", "[01]"])
def test_a_malformed_body_is_refused_as_json_loads_refuses_it(text):
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        parse_body(text.encode(), 10)


@given(
    st.lists(st.one_of(st.integers(), st.text(max_size=5), st.lists(st.booleans(), max_size=3))),
    st.sampled_from(["", " ", "\n", " \t\r\n "]),
)
def test_any_list_within_the_limit_reads_as_json_loads(items, space):
    text = json.dumps(items, separators=(space + "," + space, ":"))
    assert parse_body(f"{space}{text}{space}".encode(), len(items)) == items


def test_a_long_list_is_refused_at_the_first_element_past_the_limit():
    """Bounded work: the body ends in a syntax error, which a parser that read it all would
    report (422); stopping at element limit + 1 it never gets there."""
    tail = b"[" + b"[]," * 100_000 + b"{"
    with pytest.raises(TooManyItems, match="more than 1000 submissions"):
        parse_body(tail, 1000)
    decoded = []
    real = bodies._DECODER.raw_decode

    def counted(text, at):
        decoded.append(at)
        return real(text, at)

    for size in (10_000, 40_000):  # 1x and 4x the elements: the same decodes
        decoded.clear()
        counting = patch.object(bodies, "_DECODER", SimpleNamespace(raw_decode=counted))
        with counting, pytest.raises(TooManyItems):
            parse_body(b"[" + b"[]," * size + b"[]]", 1000)
        assert len(decoded) == 1000


def test_a_bulk_post_past_the_limit_is_413_and_parsed_off_the_event_loop(client, app_and_key):
    threads = []
    real = intake.parse_body

    def watched(*args):
        try:
            asyncio.get_running_loop()
            threads.append("event loop")
        except RuntimeError:
            threads.append("worker thread")
        return real(*args)

    headers = {"Authorization": f"Bearer {app_and_key[1]}", "Content-Type": "application/json"}
    with patch.object(intake, "parse_body", watched):
        response = client.post("/v1/submissions", content=b"[" + b"[]," * 20_000 + b"{",
                               headers=headers)  # fmt: skip
    assert response.status_code == 413, response.text
    assert "more than 1000 submissions" in response.json()["detail"]
    assert threads == ["worker thread"]


def test_one_object_larger_than_any_submission_is_refused_undecoded():
    """The body ends in a syntax error: refused 413 for its size, it was never decoded."""
    huge = b'{"k0":0' + b',"k":0' * 100_000
    with pytest.raises(ObjectTooLarge, match="at most 1000 bytes"):
        parse_body(huge, 10, max_object_bytes=1000)
    assert parse_body(b'{"id": "a"}', 10, max_object_bytes=1000) == {"id": "a"}


def test_an_object_of_many_keys_is_one_error_and_errors_are_capped(client, app_and_key):
    headers = {"Authorization": f"Bearer {app_and_key[1]}"}
    many_keys = {f"k{i}": 0 for i in range(5000)}
    response = client.post("/v1/submissions", json=[many_keys], headers=headers)
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["type"] == "too_many_fields" and error["loc"] == ["body", 0]
    assert error["msg"].startswith("5000 fields; a submission has at most: id, exam")
    bad = [{"id": f"s{i}"} for i in range(300)]  # 3 missing fields each: 900 errors
    detail = client.post("/v1/submissions", json=bad, headers=headers).json()["detail"]
    assert len(detail) == intake.MAX_ERRORS + 1
    assert detail[-1] == {"loc": ["body"], "msg": "and 800 more errors", "type": "too_many_errors"}


class Elements(Upload):
    """An 8 MiB ``[[],[],…]`` body, one 64 KiB chunk per ``receive``, counting what is pulled."""

    def __iter__(self):
        chunk = b"[" + b"[]," * (self.chunk // 3 - 1)
        while self.pulled < self.total:
            self.pulled += len(chunk)
            yield chunk
            chunk = b"[]," * (self.chunk // 3)


@contextmanager
def posting_app(tmp_path, **limits):
    """An app with 8 MiB bodies allowed (and ``limits``), and a platform's headers."""
    settings = Settings(
        service=ServiceSettings(
            database_url=f"sqlite:///{tmp_path / 'grader.db'}",
            banks=[RUBRICS / "grad_accum_engineer.yaml"],
        ),
        judge=JudgeSettings(backend="scripted"),
        limits=LimitSettings(max_body_bytes=8 * 1024 * 1024, **limits),
        pages=PageSettings(secret_key="k" * 32),
    )
    store = Store(settings.service.database_url)
    store.migrate()
    key = new_key()
    store.accounts.add_platform("a", ["grad_accum_engineer"], key.key_id, key.key_hash, "s")
    graders = Graders.load(settings)
    dispatcher = InlineDispatcher(settings, store, graders, poll_s=0.05)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key.key}"}
    try:
        yield create_app(settings, store, graders.exams, dispatcher), headers
    finally:
        dispatcher.close()


def test_a_long_list_is_refused_without_reading_the_rest_of_its_body(tmp_path):
    body = Elements(total=8 * 1024 * 1024)
    with posting_app(tmp_path) as (app, headers):
        status, text = post_streamed(app, "/v1/submissions", body, headers)
    assert status == 413 and "more than 1000 submissions" in json.loads(text)["detail"]
    assert body.pulled <= intake.PREFIX_BYTES + body.chunk  # of 8 MiB


class Keys(Upload):
    """An 8 MiB object ``{"k0":0,…}`` (after some whitespace), one chunk per ``receive``."""

    def __iter__(self):
        yield b' \n {"k":0'
        while self.pulled < self.total:
            self.pulled += self.chunk
            yield b',"k":0' * (self.chunk // 6)


def test_an_object_too_large_is_refused_without_reading_the_rest_of_its_body(tmp_path):
    body = Keys(total=8 * 1024 * 1024)
    with posting_app(tmp_path, max_answer_chars=1000) as (app, headers):
        status, text = post_streamed(app, "/v1/submissions", body, headers)
    most = 12 * 1000 + 64 * 1024  # the largest valid submission, in bytes
    assert status == 413
    assert json.loads(text)["detail"] == f"a body of one submission is at most {most} bytes"
    assert body.pulled <= most + body.chunk


def test_a_prefix_is_counted_only_over_complete_elements():
    assert too_many_in_prefix(b"[" + b"1," * 11, 10)
    assert not too_many_in_prefix(b"[" + b"1," * 9 + b"12", 10)  # the 10th may go on: 123…
    assert not too_many_in_prefix(b'[{"answer": "' + b"x" * 100, 10)
    assert not too_many_in_prefix(b'{"id": "a", ' + b" " * 100, 10)
