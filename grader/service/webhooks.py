"""Signed webhooks: tell a platform a grade is ready, retrying with backoff until it listens.

The body is JSON; ``X-Grader-Signature: sha256=<hex>`` is HMAC-SHA256 with the platform's
webhook secret over ``<timestamp>.<raw body>``, where the timestamp (Unix seconds) is sent in
``X-Grader-Timestamp``. Signing the timestamp too lets a receiver refuse replays of old
deliveries. Deliveries are at least once: ``X-Grader-Delivery`` names the delivery, so a
receiver can drop a repeat.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
import time
from datetime import timedelta

import httpx

from grader.models import DeliveryStatus
from grader.service.store import Delivery, Store
from grader.service.webhook_urls import AddressRefused, url_problem

SIGNATURE_HEADER = "X-Grader-Signature"
TIMESTAMP_HEADER = "X-Grader-Timestamp"
DELIVERY_HEADER = "X-Grader-Delivery"


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


def sign(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(
    secret: str, timestamp: str, body: bytes, signature: str, tolerance_s: float = 300
) -> bool:
    """What a receiver does: recompute the signature, compare in constant time, check age."""
    try:
        sent = int(timestamp)
    except ValueError:
        return False
    if abs(time.time() - sent) > tolerance_s:
        return False
    return hmac.compare_digest(sign(secret, sent, body), signature)


def payload(delivery: Delivery) -> dict:
    """What a platform receives: the event, the delivery id (drop repeats by it), the exam,
    its own submission id and the grade as it stands now (an instructor's override wins)."""
    if delivery.grade is None:
        raise ValueError(f"delivery {delivery.id} has no grade to announce")
    return {
        "event": delivery.event,
        "delivery_id": delivery.id,
        "exam": delivery.exam,
        "submission_id": delivery.submission_id,
        "grade": delivery.grade.model_dump(mode="json"),
    }


def backoff(attempt: int, base_s: float = 2.0, cap_s: float = 3600.0) -> float:
    """Seconds before retry ``attempt`` (1-based): base, 2·base, 4·base, ... up to the cap."""
    return min(cap_s, base_s * 2 ** max(0, attempt - 1))


async def deliver(
    store: Store,
    delivery_id: int,
    *,
    client: httpx.AsyncClient,
    retries: int,
    backoff_s: float = 2.0,
    timeout_s: float | None = None,
) -> float | None:
    """Try one delivery. Returns the seconds until the next try, or None when it is settled
    (delivered, given up, refused, or nothing to do). The store is read and written on worker
    threads (``asyncio.to_thread``): the event loop only waits on the network.

    ``client`` is ``webhook_transport.webhook_client``'s in service: its connections check
    the addresses they dial, and one inside the service's network fails the delivery for good
    (``AddressRefused``), as does a URL of a form no client can send to. Any other error,
    whatever its type, is a failed try, retried with backoff until ``retries`` run out: no
    error leaves a delivery pending and untried. ``timeout_s`` bounds the whole try (connect,
    send, the status line), however slowly a receiver dribbles its answer. Errors of the
    store itself propagate.
    """
    outbox = store.outbox
    delivery = await asyncio.to_thread(outbox.delivery, delivery_id)
    if delivery is None or delivery.status != DeliveryStatus.PENDING or not delivery.url:
        return None
    malformed = url_problem(delivery.url)
    if malformed:
        await asyncio.to_thread(outbox.delivery_failed, delivery.id, f"refused: {malformed}", None)
        return None
    try:
        async with asyncio.timeout(timeout_s):
            status = await _post(client, delivery.url, _signed(delivery))
        error = None if 200 <= status < 300 else f"HTTP {status}"
    except AddressRefused as exc:
        await asyncio.to_thread(outbox.delivery_failed, delivery.id, f"refused: {exc}", None)
        return None
    except TimeoutError as exc:  # the whole try's deadline
        error = f"no answer within {timeout_s:g} s" if timeout_s else f"TimeoutError: {exc}"
    except Exception as exc:  # a timeout, a reset, a URL httpx will not send to, a bug
        error = f"{type(exc).__name__}: {exc}"
    if error is None:
        await asyncio.to_thread(outbox.delivery_succeeded, delivery.id)
        return None
    return await asyncio.to_thread(_failed, store, delivery, error, retries, backoff_s)


def _signed(delivery: Delivery) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload(delivery), ensure_ascii=False, separators=(",", ":")).encode()
    timestamp = int(time.time())
    return body, {
        "Content-Type": "application/json",
        SIGNATURE_HEADER: sign(delivery.secret, timestamp, body),
        TIMESTAMP_HEADER: str(timestamp),
        DELIVERY_HEADER: str(delivery.id),
    }


def _failed(
    store: Store, delivery: Delivery, error: str, retries: int, backoff_s: float
) -> float | None:
    """Record a failed attempt: the seconds until the next, or None when out of retries."""
    attempt = delivery.attempts + 1
    if attempt > retries:
        store.outbox.delivery_failed(delivery.id, error, None)
        return None
    wait = backoff(attempt, backoff_s)
    store.outbox.delivery_failed(delivery.id, error, timedelta(seconds=wait))
    return wait


async def _post(client: httpx.AsyncClient, url: str, signed: tuple[bytes, dict[str, str]]) -> int:
    """The answer's status; its body is never read (a platform's reply may be any size)."""
    body, headers = signed
    async with client.stream("POST", url, content=body, headers=headers) as response:
        return response.status_code
