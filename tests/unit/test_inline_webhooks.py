"""Inline mode sends webhooks off the grading path: a platform whose endpoint accepts the
request and never answers delays its own webhooks only, never another platform's grades."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from grader.config import JudgeSettings, ServiceSettings, Settings, WebhookSettings
from grader.models import SubmissionStatus
from grader.service.courier import host_of
from grader.service.dispatch import InlineDispatcher
from grader.service.exams import Graders
from grader.service.store import NewSubmission, Store
from tests.conftest import RUBRICS
from tests.integration.service import WebhookReceiver, wait_for

EXAM = "grad_accum_engineer"
CHOICE = "004-s1-q1"


class HangingEndpoint:
    """Reads each webhook and holds the connection open without answering until released;
    counts the requests it holds at once."""

    def __init__(self):
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.held = 0
        self.most_held = 0
        self.received: list[str] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with endpoint.lock:
                    endpoint.received.append(json.loads(body)["submission_id"])
                    endpoint.held += 1
                    endpoint.most_held = max(endpoint.most_held, endpoint.held)
                endpoint.release.wait(120)
                with endpoint.lock:
                    endpoint.held -= 1
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def now_held(self) -> int:
        with self.lock:
            return self.held

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hanging():
    endpoint = HangingEndpoint()
    yield endpoint
    endpoint.close()


def test_a_hanging_webhook_delays_no_other_platforms_grade(database_url, hanging):
    settings = Settings(
        service=ServiceSettings(database_url=database_url, banks=[RUBRICS / f"{EXAM}.yaml"]),
        judge=JudgeSettings(backend="scripted"),
        webhooks=WebhookSettings(timeout_s=120, concurrency=4, per_host=2, allow_private=True),
    )
    store = Store(database_url)
    store.migrate()
    slow = store.accounts.add_platform("slow", [EXAM], "k1", "h1", "s1", hanging.url)
    fast_receiver = WebhookReceiver("s2")
    fast = store.accounts.add_platform("fast", [EXAM], "k2", "h2", "s2", fast_receiver.url)
    dispatcher = InlineDispatcher(settings, store, Graders.load(settings), poll_s=0.05)
    try:
        queued = store.intake.submit(
            slow, [NewSubmission(f"s{i}", EXAM, CHOICE, "B", None) for i in range(5)]
        )
        dispatcher.enqueue([s for s, _ in queued])
        # the slow platform's endpoint holds two requests: its host's share, no more
        wait_for(lambda: hanging.now_held() == 2, 30, "two webhooks held by the slow platform")

        ((late, _),) = store.intake.submit(fast, [NewSubmission("f1", EXAM, CHOICE, "B", None)])
        dispatcher.enqueue([late])
        wait_for(lambda: fast_receiver.ids() == {"f1"}, 30, "the fast platform's webhook")
        # graded and announced while the slow endpoint still held its requests unanswered
        assert hanging.now_held() == 2 and hanging.most_held == 2
        assert store.intake.submission(fast, "f1").status == SubmissionStatus.GRADED
        assert all(r["valid"] for r in fast_receiver.received)

        hanging.release.set()  # the slow platform answers at last: its other webhooks follow
        wait_for(lambda: len(set(hanging.received)) == 5, 30, "the slow platform's 5 webhooks")
        assert hanging.most_held == 2
    finally:
        hanging.release.set()
        dispatcher.close()
        fast_receiver.server.shutdown()
        store.engine.dispose()


def test_the_per_host_limit_counts_scheme_host_and_port():
    assert host_of("http://127.0.0.1:8001/a") != host_of("http://127.0.0.1:8002/a")
    assert host_of("https://Acme.example/x") == host_of("https://acme.example/y?z=1")
    assert host_of(None) == ""


def test_a_try_that_ends_while_the_outbox_is_read_is_not_started_again(monkeypatch):
    """The outbox read can predate the try's own update (its retry time, its success): the
    courier leaves such a delivery to the next round instead of trying it twice."""
    from grader.service import courier as courier_module

    release, tries = threading.Event(), []

    def deliver(store, delivery_id, **kwargs):
        tries.append(delivery_id)
        release.wait(10)

    class Outbox:
        reads = 0

        def due_destinations(self):
            Outbox.reads += 1
            if Outbox.reads == 2:  # the first try ends while this (stale) read is made
                release.set()
                wait_for(lambda: courier.in_flight() == 0, 10, "the first try to end")
            return [(7, "http://127.0.0.1:9/hook")]

    class FakeStore:
        outbox = Outbox()

    monkeypatch.setattr(courier_module, "deliver", deliver)
    courier = courier_module.Courier(WebhookSettings(), 2.0, FakeStore())
    try:
        assert courier.send_due() == [7]
        assert courier.send_due() == []  # stale: delivery 7 ended during the read
        assert courier.send_due() == [7]  # a fresh read: due again, so tried again
        wait_for(lambda: courier.in_flight() == 0, 10, "the second try to end")
        assert tries == [7, 7]
    finally:
        release.set()
        courier.close()
