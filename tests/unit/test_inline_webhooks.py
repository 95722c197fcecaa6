"""The courier sends webhooks off the grading path: a platform whose endpoint accepts the
request and never answers delays its own webhooks only, never another platform's grades;
two couriers send each delivery once; a submission's events arrive in outbox order; a
delivery whose sender died goes out when its claim ends."""

import json
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import sqlalchemy as sa

from grader.config import JudgeSettings, ServiceSettings, Settings, WebhookSettings
from grader.models import Grade, GradeStatus, Method, SubmissionStatus
from grader.service.courier import Courier, host_of
from grader.service.dispatch import InlineDispatcher
from grader.service.exams import Graders
from grader.service.store import NewSubmission, Store, utcnow
from grader.service.store.schema import submissions, webhook_deliveries
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


def graded_with_deliveries(store: Store, platform: int, n: int) -> list[int]:
    """``n`` submissions stored graded, each with its pending delivery: their ids in order."""
    stored = [s for s, _ in store.intake.submit(
        platform, [NewSubmission(f"s{i}", EXAM, CHOICE, "B", None) for i in range(n)])]  # fmt: skip
    return store.queue.record([(s, grade_of(s)) for s in stored])


def grade_of(stored) -> Grade:
    return Grade(submission_id=stored.external_id, question_id=CHOICE, status=GradeStatus.GRADED,
                 score=1.0, max_score=1.0, method=Method.EXACT)  # fmt: skip


def courier_for(store: Store, **webhooks) -> Courier:
    settings = WebhookSettings(**{"timeout_s": 5, "allow_private": True, **webhooks})
    return Courier(settings, 0.05, store, poll_s=0.05)


def test_two_couriers_send_each_delivery_once(database_url):
    """Two workers consuming io: each due delivery is claimed by one of them, sent once."""
    store = Store(database_url)
    store.migrate()
    receiver = WebhookReceiver("s1")
    platform = store.accounts.add_platform("p", [EXAM], "k1", "h1", "s1", receiver.url)
    deliveries = graded_with_deliveries(store, platform, 120)
    couriers = [courier_for(store, concurrency=8, per_host=8) for _ in range(2)]
    try:
        wait_for(lambda: len(receiver.received) >= 120, 60, "120 webhooks")
        time.sleep(0.5)  # a second sending of any would arrive by now
    finally:
        for courier in couriers:
            courier.close()
        receiver.server.shutdown()
    sent = [int(r["delivery"]) for r in receiver.received]
    assert sorted(sent) == deliveries and all(r["valid"] for r in receiver.received)
    assert {store.outbox.delivery(i).status for i in deliveries} == {"delivered"}
    store.engine.dispose()


def test_a_submissions_events_arrive_in_outbox_order(database_url):
    """A submission's second event waits while its first is pending (its first try refused,
    waiting for the retry): the receiver gets them in the order they were written."""
    store = Store(database_url)
    store.migrate()
    refused: set[str] = set()
    receiver = WebhookReceiver("s1", refuse_first=lambda sid: sid in refused)
    platform = store.accounts.add_platform("p", [EXAM], "k1", "h1", "s1", receiver.url)
    first, _ = graded_with_deliveries(store, platform, 2)
    later, name = add_event(store, first, "grade.updated")
    refused.add(name)
    courier = courier_for(store, concurrency=8, per_host=8)
    try:
        wait_for(lambda: len(receiver.received) == 3, 30, "three webhooks")
    finally:
        courier.close()
        receiver.server.shutdown()
    order = [(r["submission_id"], r["payload"]["event"]) for r in receiver.received]
    assert order.index((name, "grade.completed")) < order.index((name, "grade.updated"))
    assert [int(r["delivery"]) for r in receiver.received if r["submission_id"] == name] == [
        first, later]  # fmt: skip
    assert receiver.refused == {name}
    store.engine.dispose()


def add_event(store: Store, after: int, event: str) -> tuple[int, str]:
    """Another outbox row for the submission of delivery ``after``, a later event of it: its
    id, and the submission's id as its platform knows it."""
    with store.engine.begin() as conn:
        row = conn.execute(
            sa.select(webhook_deliveries).where(webhook_deliveries.c.id == after)
        ).one()
        now = utcnow()
        added = conn.execute(
            webhook_deliveries.insert().values(
                platform_id=row.platform_id,
                submission_id=row.submission_id,
                event=event,
                status="pending",
                attempts=0,
                next_attempt_at=now,
                created_at=now,
            )
        ).inserted_primary_key[0]
        name = conn.execute(
            sa.select(submissions.c.external_id).where(submissions.c.id == row.submission_id)
        ).scalar_one()
    return added, name


def test_a_delivery_whose_sender_died_is_sent_when_its_claim_ends(database_url):
    """A courier claimed a delivery and died before settling it: another sends it once the
    claim's lease has run out, not before."""
    store = Store(database_url)
    store.migrate()
    receiver = WebhookReceiver("s1")
    platform = store.accounts.add_platform("p", [EXAM], "k1", "h1", "s1", receiver.url)
    (delivery_id,) = graded_with_deliveries(store, platform, 1)
    (claimed,) = store.outbox.claim_due(10, timedelta(seconds=2))
    assert claimed.id == delivery_id
    assert store.outbox.claim_due(10, timedelta(seconds=2)) == []  # taken
    claimed_at = time.monotonic()
    courier = courier_for(store)
    try:
        wait_for(lambda: receiver.received, 30, "the webhook")
        assert time.monotonic() - claimed_at >= 1.5
    finally:
        courier.close()
        receiver.server.shutdown()
    assert store.outbox.delivery(delivery_id).status == "delivered"
    store.engine.dispose()
