"""Webhook signatures and delivery attempts, against httpx's MockTransport."""

import json
import time

import httpx
import pytest
import sqlalchemy as sa

from grader.models import Grade, GradeStatus, Method
from grader.service.store import NewSubmission, Store
from grader.service.store.schema import webhook_deliveries
from grader.service.webhooks import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    backoff,
    deliver,
    sign,
    verify,
)

# The mock platform's host ("platform") is no public address: these tests run as an operator
# with GRADER_WEBHOOK_ALLOW_PRIVATE=true would (the URL checks have their own tests below).
PRIVATE = {"allow_private": True}


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
    return _delivery(tmp_path, "http://platform/hook")


def _delivery(tmp_path, url: str):
    store = Store(f"sqlite:///{tmp_path / 'g.db'}")
    store.migrate()
    platform = store.accounts.add_platform("p", ["e"], "kid", "hash", "s3cret", url)
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
    assert (
        deliver(store, delivery_id, retries=3, timeout_s=1, client=client(204, seen), **PRIVATE)
        is None
    )
    request = seen[0]
    assert verify("s3cret", request.headers[TIMESTAMP_HEADER], request.content,
                  request.headers[SIGNATURE_HEADER])  # fmt: skip
    payload = json.loads(request.content)
    assert payload["submission_id"] == "x1" and payload["grade"]["score"] == 1.0
    assert store.outbox.delivery(delivery_id).status == "delivered"
    deliver(store, delivery_id, retries=3, timeout_s=1, client=client(204, seen), **PRIVATE)
    assert len(seen) == 1


def test_a_refused_webhook_is_retried_with_backoff_then_given_up(delivery):
    store, delivery_id = delivery
    seen = []
    waits = [
        deliver(
            store,
            delivery_id,
            retries=2,
            timeout_s=1,
            backoff_s=1,
            client=client(500, seen),
            **PRIVATE,
        )
        for _ in range(3)
    ]
    assert waits == [1, 2, None]
    final = store.outbox.delivery(delivery_id)
    assert (final.status, final.attempts) == ("failed", 3)
    assert store.outbox.due_deliveries() == []


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:9/hook", "127.0.0.1, a loopback address"),
        ("http://localhost/hook", "a loopback address"),  # resolved now, not read as text
        ("http://169.254.169.254/latest/meta-data", "a link-local address"),
        ("http://10.1.2.3/hook", "a private address"),
        ("http://[::1]:9/hook", "::1, a loopback address"),
        ("http://[::ffff:192.168.0.7]/hook", "192.168.0.7, a private address"),
        ("file:///etc/passwd", "scheme file: refused"),
    ],
)
def test_a_webhook_to_an_address_inside_the_network_is_refused_at_delivery(tmp_path, url, why):
    store, delivery_id = _delivery(tmp_path, url)
    seen = []
    assert deliver(store, delivery_id, retries=3, timeout_s=1, client=client(204, seen)) is None
    assert seen == []  # nothing was sent
    final = store.outbox.delivery(delivery_id)
    assert final.status == "failed" and store.outbox.due_deliveries() == []
    assert _last_error(store, delivery_id).startswith("refused: ") and why in _last_error(
        store, delivery_id
    )


def test_a_public_address_is_delivered_and_the_flag_allows_private_ones(tmp_path):
    store, delivery_id = _delivery(tmp_path, "http://8.8.8.8/hook")
    seen = []
    assert deliver(store, delivery_id, retries=3, timeout_s=1, client=client(204, seen)) is None
    assert len(seen) == 1 and store.outbox.delivery(delivery_id).status == "delivered"
    (tmp_path / "allowed").mkdir()
    store, delivery_id = _delivery(tmp_path / "allowed", "http://127.0.0.1:9/hook")
    deliver(store, delivery_id, retries=3, timeout_s=1, client=client(204, seen), **PRIVATE)
    assert len(seen) == 2 and store.outbox.delivery(delivery_id).status == "delivered"


def test_a_host_that_does_not_resolve_is_retried_like_a_failed_post(tmp_path):
    store, delivery_id = _delivery(tmp_path, "http://no-such-host.invalid/hook")
    seen = []
    wait = deliver(
        store, delivery_id, retries=3, timeout_s=1, backoff_s=1, client=client(204, seen)
    )
    assert wait == 1 and seen == []
    pending = store.outbox.delivery(delivery_id)
    assert pending.status == "pending" and "cannot resolve" in _last_error(store, delivery_id)


def _last_error(store, delivery_id: int) -> str:
    with store.engine.connect() as conn:
        return conn.execute(
            sa.select(webhook_deliveries.c.last_error).where(webhook_deliveries.c.id == delivery_id)
        ).scalar_one()
