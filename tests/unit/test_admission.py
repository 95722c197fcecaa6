"""Fairness between platforms before any body byte is read: a key over its
requests in flight, or whose posts keep being refused, is answered 429 with Retry-After and
its body is never pulled, while another platform is served; and a response sent before a body
has all arrived closes the connection, so the server never reads (and discards) the rest."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from types import SimpleNamespace

import pytest
import uvicorn

from grader.api import admission
from grader.api.app import create_app
from grader.api.keys import new_key
from grader.api.limits import BodyLimit
from grader.api.server import server_config
from grader.config import LimitSettings, ServiceSettings, Settings
from grader.service.exams import load_exams
from grader.service.store import Store
from tests.conftest import RUBRICS
from tests.dispatchers import Holding
from tests.integration.service import wait_for
from tests.unit.test_slow_clients import connect, read_all

EXAM = "grad_accum_engineer"
CHOICE = "004-s1-q1"


@pytest.fixture
def build(tmp_path):
    """``build(**limits)``: an app on a fresh database, and two platforms' auth headers."""
    made: list[Store] = []

    def _build(**limits):
        url = f"sqlite:///{tmp_path / f'grader{len(made)}.db'}"
        service = ServiceSettings(database_url=url, banks=[RUBRICS / f"{EXAM}.yaml"])
        settings = Settings(service=service, limits=LimitSettings(**limits))
        store = Store(url)
        store.migrate()
        made.append(store)
        headers = {}
        for name in ("a", "b"):
            key = new_key()
            store.accounts.add_platform(name, [EXAM], key.key_id, key.key_hash, "secret")
            headers[name] = {"authorization": f"Bearer {key.key}"}
        exams = load_exams(settings.service.banks)
        return create_app(settings, store, exams, Holding()), headers

    yield _build
    for store in made:
        store.engine.dispose()


class Body:
    """A request body handed over one chunk per ``receive``; ``pulled`` counts the chunks the
    server asked for, and ``hold`` (when given) keeps the first one back until it is set."""

    def __init__(self, chunks: list[bytes], hold: asyncio.Event | None = None):
        self.chunks, self.hold, self.pulled = chunks, hold, 0

    async def receive(self) -> dict:
        if self.hold is not None:
            await self.hold.wait()
        self.pulled += 1
        chunk = self.chunks[self.pulled - 1] if self.pulled <= len(self.chunks) else b""
        return {"type": "http.request", "body": chunk, "more_body": self.pulled < len(self.chunks)}


class Reply(SimpleNamespace):
    status: int
    headers: dict[bytes, bytes]
    text: str


async def call(app, headers: dict[str, str], body: Body, path: str = "/v1/submissions") -> Reply:
    """One POST straight through the ASGI app."""
    size = sum(len(c) for c in body.chunks)
    head = {**headers, "content-type": "application/json", "content-length": str(size)}
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 5000), "server": ("testserver", 80),
        "headers": [(k.encode(), v.encode()) for k, v in head.items()],
    }  # fmt: skip
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    await app(scope, body.receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    text = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return Reply(status=start["status"], headers=dict(start["headers"]), text=text.decode())


def submission(i: str) -> bytes:
    return json.dumps({"id": i, "exam": EXAM, "question_id": CHOICE, "answer": "B"}).encode()


def test_a_key_over_its_requests_in_flight_is_429_unread_and_another_key_is_served(build):
    app, auth = build(max_in_flight_per_key=2)

    async def scenario():
        held = asyncio.Event()
        slow = [Body([submission(f"s{i}")], hold=held) for i in range(2)]
        in_flight = [asyncio.create_task(call(app, auth["a"], body)) for body in slow]
        for _ in range(1000):  # until both are in flight, waiting on their bodies
            await asyncio.sleep(0.01)
            if app.middleware_stack is not None and _in_flight(app) == 2:
                break
        third = Body([b"[" + b"[]," * 100_000 + b"[]]"])
        over = await call(app, auth["a"], third)
        other = await call(app, auth["b"], Body([submission("b1")]))
        held.set()
        return over, third, other, await asyncio.gather(*in_flight)

    over, third, other, first_two = asyncio.run(scenario())
    assert over.status == 429 and over.headers[b"retry-after"] == b"1"
    assert "GRADER_MAX_IN_FLIGHT_PER_KEY" in json.loads(over.text)["detail"]
    assert third.pulled == 0  # not one byte of its body read
    assert over.headers[b"connection"] == b"close"  # nor read later to keep the connection
    assert other.status == 202, other.text
    assert [r.status for r in first_two] == [202, 202]


def _in_flight(app) -> int:
    return sum(state.in_flight for state in _admission(app).keys.values())


def _admission(app) -> admission.Admission:
    layer = app.middleware_stack
    while not isinstance(layer, admission.Admission):
        layer = layer.app
    return layer


def test_a_key_whose_posts_keep_being_refused_waits_for_its_allowance_unread(build, monkeypatch):
    """Two refused posts a minute: after two, the key waits until its allowance has refilled
    by one post (30 s after the second), its next body unread; another key is served."""
    now = [1000.0]
    monkeypatch.setattr(admission, "time", SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setattr(admission, "PENALTY_DELAY_S", 0)
    app, auth = build(refused_posts_per_minute=2)

    async def scenario():
        refused = [await call(app, auth["a"], Body([b"[[],"])) for _ in range(2)]
        now[0] += 15
        good = Body([submission("a1")])
        waiting = await call(app, auth["a"], good)
        other = await call(app, auth["b"], Body([submission("b1")]))
        now[0] += 15  # one refused post earned back
        again = await call(app, auth["a"], Body([submission("a1")]))
        return refused, waiting, good, other, again

    refused, waiting, good, other, again = asyncio.run(scenario())
    assert [r.status for r in refused] == [422, 422]
    assert waiting.status == 429 and waiting.headers[b"retry-after"] == b"15"
    assert "GRADER_REFUSED_POSTS_PER_MINUTE" in json.loads(waiting.text)["detail"]
    assert good.pulled == 0 and waiting.headers[b"connection"] == b"close"
    assert other.status == 202, other.text
    assert again.status == 202, again.text


def test_refused_posts_are_cut_off_after_a_burst_not_a_minutes_worth(build, monkeypatch):
    """600 a minute allows one every 0.1 s, but a flood is cut off after BURST at once."""
    monkeypatch.setattr(admission, "time", SimpleNamespace(monotonic=lambda: 1000.0))
    monkeypatch.setattr(admission, "PENALTY_DELAY_S", 0)
    app, auth = build(refused_posts_per_minute=600)

    async def scenario():
        return [(await call(app, auth["a"], Body([b"{"]))).status for _ in range(15)]

    statuses = asyncio.run(scenario())
    assert statuses == [422] * admission.BURST + [429] * (15 - admission.BURST)


def test_a_key_that_posts_again_at_once_is_answered_late_and_counts_in_flight(build, monkeypatch):
    """A client that ignores Retry-After: its 429 is held back (here for an hour), and while
    held it counts as in flight, so past the in-flight limit the key is answered at once."""
    monkeypatch.setattr(admission, "PENALTY_DELAY_S", 3600)
    app, auth = build(refused_posts_per_minute=1, max_in_flight_per_key=1)

    async def scenario():
        refused = await call(app, auth["a"], Body([b"{"]))
        again = Body([submission("a1")])
        held = asyncio.create_task(call(app, auth["a"], again))
        for _ in range(1000):
            await asyncio.sleep(0.01)
            if _in_flight(app) == 1:
                break
        over = await call(app, auth["a"], Body([submission("a2")]))
        other = await call(app, auth["b"], Body([submission("b1")]))
        answered_yet = held.done()
        held.cancel()
        with pytest.raises(asyncio.CancelledError):
            await held
        return refused, again, over, other, answered_yet

    refused, again, over, other, answered_yet = asyncio.run(scenario())
    assert refused.status == 422 and not answered_yet and again.pulled == 0
    assert over.status == 429 and over.headers[b"retry-after"] == b"1"
    assert "GRADER_MAX_IN_FLIGHT_PER_KEY" in json.loads(over.text)["detail"]
    assert other.status == 202, other.text
    assert _in_flight(app) == 0  # the held request, gone, is no longer counted


def test_no_refusal_limit_when_set_to_zero(build):
    app, auth = build(refused_posts_per_minute=0)

    async def scenario():
        return [(await call(app, auth["a"], Body([b"{"]))).status for _ in range(80)]

    assert set(asyncio.run(scenario())) == {422}


def test_a_wrong_key_neither_shares_nor_spends_a_real_keys_counts(build):
    app, auth = build(refused_posts_per_minute=1)
    key = auth["a"]["authorization"]
    wrong = {"authorization": key[:-1] + ("x" if key[-1] != "x" else "y")}

    async def scenario():
        statuses = [(await call(app, wrong, Body([b"{"]))).status for _ in range(3)]
        return statuses, await call(app, auth["a"], Body([submission("a1")]))

    statuses, real = asyncio.run(scenario())
    assert statuses == [401, 401, 401]  # the route's own check; no refusal counted
    assert real.status == 202, real.text
    assert _admission(app).keys == {}  # nothing in flight, nothing refused: nothing kept


def test_a_body_read_to_its_end_keeps_the_connection_and_one_left_unread_closes_it(build):
    app, auth = build()

    async def scenario():
        read = await call(app, auth["a"], Body([submission("a1")]))
        unread = await call(app, {"authorization": "Bearer gk_nope"}, Body([b"{", b"}"]))
        return read, unread

    read, unread = asyncio.run(scenario())
    assert read.status == 202 and b"connection" not in read.headers
    assert unread.status == 401 and unread.headers[b"connection"] == b"close"


async def refuse_unread(scope, receive, send):
    """Answers 401 without reading the body, as a route refusing a key does."""
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 401,
                "headers": [(b"content-length", b"2")]})  # fmt: skip
    await send({"type": "http.response.body", "body": b"no"})


def test_the_server_closes_instead_of_reading_the_rest_of_a_refused_body():
    """Under uvicorn: after the 401 the connection is closed at once. Kept alive, uvicorn
    would read and discard the rest of the body, and wait for it (here: 60 s, past the test's
    20 s read bound)."""
    limits = LimitSettings(request_body_timeout_s=60)
    app = BodyLimit(refuse_unread, limit=8 * 1024 * 1024, form_limit=64 * 1024)
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    config = server_config(limits, app, "127.0.0.1", 0)
    config.log_level = "warning"
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    try:
        wait_for(lambda: running.started, 20, "uvicorn to start")
        with connect(listening.getsockname()) as conn:
            head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 8000000\r\n\r\n"
            conn.sendall(head + b"x" * 1000)
            answer = read_all(conn)
        assert answer.startswith(b"HTTP/1.1 401") and b"connection: close" in answer.lower()
    finally:
        running.should_exit = True
        thread.join(10)
