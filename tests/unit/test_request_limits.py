"""One body limit for every route, enforced before the body is read, and limits on forms:
how many fields, how large each, and no file parts."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastapi.testclient import TestClient

from grader.api.app import create_app
from grader.api.keys import new_key
from grader.config import Settings
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
        database_url=f"sqlite:///{folder / 'grader.db'}",
        banks=[RUBRICS / "grad_accum_engineer.yaml"],
        judge="scripted",
        max_body_bytes=LIMIT,
        max_form_bytes=FORM_LIMIT,
    )
    store = Store(settings.database_url)
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
         {"files": {f"f{i}": (None, b"1") for i in range(100)}}, 400),
    ],
)  # fmt: skip
def test_forms_refuse_files_too_many_fields_and_large_fields(client, name, request_kwargs, status):
    response = client.post("/instructor/login", **request_kwargs)
    assert response.status_code == status, (name, response.text[:200])


def test_an_ordinary_login_form_still_works(client):
    response = client.post("/instructor/login", data={"key": "ik_0123456789abcdef_x"})
    assert response.status_code == 401 and "not a valid key" in response.text
