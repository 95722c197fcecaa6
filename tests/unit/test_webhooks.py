"""Webhook signatures and delivery attempts, against httpx's MockTransport."""

import json
import time

import httpx
import pytest

from grader.models import Grade, GradeStatus, Method
from grader.service.store import NewSubmission, Store
from grader.service.webhooks import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    backoff,
    deliver,
    sign,
    verify,
)


def test_signature_round_trip_and_tampering():
    body, now = b'{"a":1}', int(time.time())
    signature = sign("s3cret", now, body)
    assert signature.startswith("sha256=") and len(signature) == 7 + 64
    assert verify("s3cret", str(now), body, signature)
    assert not verify("s3cret", str(now), b'{"a":2}', signature)
    assert not verify("other", str(now), body, signature)
    assert not verify("s3cret", str(now - 3600), body, sign("s3cret", now - 3600, body))
    assert not verify("s3cret", "yesterday", body, signature)


def test_backoff_doubles_up_to_the_cap():
    assert [backoff(n, 2.0, 20.0) for n in (1, 2, 3, 4, 5)] == [2.0, 4.0, 8.0, 16.0, 20.0]


@pytest.fixture
def delivery(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'g.db'}")
    store.migrate()
    platform = store.accounts.add_platform(
        "p", ["e"], "kid", "hash", "s3cret", "http://platform/hook"
    )
    ((stored, _),) = store.intake.submit(platform, [NewSubmission("x1", "e", "q1", "A")])
    grade = Grade(submission_id="x1", question_id="q1", status=GradeStatus.GRADED, score=1.0,
                  max_score=1.0, method=Method.EXACT)  # fmt: skip
    (delivery_id,) = store.queue.record([(stored, grade)])
    return store, delivery_id


def client(status, seen):
    def handler(request):
        seen.append(request)
        return httpx.Response(status)

    return httpx.Client(transport=httpx.MockTransport(handler))


def test_a_delivered_webhook_is_signed_and_not_sent_again(delivery):
    store, delivery_id = delivery
    seen = []
    assert deliver(store, delivery_id, retries=3, timeout_s=1, client=client(204, seen)) is None
    request = seen[0]
    assert verify("s3cret", request.headers[TIMESTAMP_HEADER], request.content,
                  request.headers[SIGNATURE_HEADER])  # fmt: skip
    payload = json.loads(request.content)
    assert payload["submission_id"] == "x1" and payload["grade"]["score"] == 1.0
    assert store.outbox.delivery(delivery_id).status == "delivered"
    deliver(store, delivery_id, retries=3, timeout_s=1, client=client(204, seen))
    assert len(seen) == 1


def test_a_refused_webhook_is_retried_with_backoff_then_given_up(delivery):
    store, delivery_id = delivery
    seen = []
    waits = [
        deliver(store, delivery_id, retries=2, timeout_s=1, backoff_s=1, client=client(500, seen))
        for _ in range(3)
    ]
    assert waits == [1, 2, None]
    final = store.outbox.delivery(delivery_id)
    assert (final.status, final.attempts) == ("failed", 3)
    assert store.outbox.due_destinations() == []
