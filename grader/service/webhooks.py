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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import httpx

from grader.service.store import Delivery, Store
from grader.service.webhook_urls import AddressRefused, url_problem

SIGNATURE_HEADER = "X-Grader-Signature"
TIMESTAMP_HEADER = "X-Grader-Timestamp"
DELIVERY_HEADER = "X-Grader-Delivery"
DRAINED_BYTES = 64 * 1024  # of a reply's body, read (never kept) to reuse its connection


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
    its own submission id, the grade's version (keep the highest), what changed it, and the
    grade of that version (an instructor's grade wins)."""
    if delivery.grade is None:
        raise ValueError(f"delivery {delivery.id} has no grade to announce")
    body = {
        "event": delivery.event,
        "delivery_id": delivery.id,
        "exam": delivery.exam,
        "submission_id": delivery.submission_id,
    }
    if delivery.change is not None:
        body["version"] = delivery.change.version
        body["change"] = delivery.change.summary()
    body["grade"] = delivery.grade.model_dump(mode="json")
    return body


def backoff(attempt: int, base_s: float = 2.0, cap_s: float = 3600.0) -> float:
    """Seconds before retry ``attempt`` (1-based): base, 2·base, 4·base, ... up to the cap."""
    return min(cap_s, base_s * 2 ** max(0, attempt - 1))


@dataclass(frozen=True)
class Attempt:
    """What one try of a delivery came to: ``error`` None when the receiver took it (2xx);
    ``final`` when no retry can help (an address inside the network, a URL no client sends)."""

    delivery: Delivery
    error: str | None
    final: bool = False


async def attempt(
    client: httpx.AsyncClient, delivery: Delivery, timeout_s: float | None = None
) -> Attempt:
    """One try of ``delivery``, signed now. Nothing is written: ``settle`` records it.

    ``client`` is ``webhook_transport.webhook_client``'s in service: its connections check
    the addresses they dial, and one inside the service's network fails the delivery for good
    (``AddressRefused``), as does a URL of a form no client can send to. Any other error,
    whatever its type, is a failed try. ``timeout_s`` bounds the whole try (connect, send,
    the status line), however slowly a receiver dribbles its answer.
    """
    if not delivery.url:  # the platform's URL was removed since the grade
        return Attempt(delivery, "refused: the platform has no webhook URL", final=True)
    malformed = url_problem(delivery.url)
    if malformed:
        return Attempt(delivery, f"refused: {malformed}", final=True)
    try:
        async with asyncio.timeout(timeout_s):
            status = await _post(client, delivery.url, _signed(delivery))
    except AddressRefused as exc:
        return Attempt(delivery, f"refused: {exc}", final=True)
    except TimeoutError as exc:  # the whole try's deadline
        error = f"no answer within {timeout_s:g} s" if timeout_s else f"TimeoutError: {exc}"
        return Attempt(delivery, error)
    except Exception as exc:  # a timeout, a reset, a URL httpx will not send to, a bug
        return Attempt(delivery, f"{type(exc).__name__}: {exc}")
    return Attempt(delivery, None if 200 <= status < 300 else f"HTTP {status}")


def settle(
    store: Store, attempts: Sequence[Attempt], retries: int, backoff_s: float = 2.0
) -> list[float | None]:
    """Record tries in one transaction: delivered, retried after a backoff until ``retries``
    run out, or given up. Returns the seconds until each one's next try (None: settled)."""
    delivered, failed, waits = [], [], []
    for tried in attempts:
        wait = None
        if tried.error is None:
            delivered.append(tried.delivery.id)
        else:
            number = tried.delivery.attempts + 1
            if not tried.final and number <= retries:
                wait = backoff(number, backoff_s)
            failed.append((tried.delivery.id, tried.error, _seconds(wait)))
        waits.append(wait)
    store.outbox.settle(delivered, failed)
    return waits


def _seconds(wait: float | None) -> timedelta | None:
    return None if wait is None else timedelta(seconds=wait)


def _signed(delivery: Delivery) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload(delivery), ensure_ascii=False, separators=(",", ":")).encode()
    timestamp = int(time.time())
    return body, {
        "Content-Type": "application/json",
        SIGNATURE_HEADER: sign(delivery.secret, timestamp, body),
        TIMESTAMP_HEADER: str(timestamp),
        DELIVERY_HEADER: str(delivery.id),
    }


async def _post(client: httpx.AsyncClient, url: str, signed: tuple[bytes, dict[str, str]]) -> int:
    """The answer's status. Its body is read and dropped, up to ``DRAINED_BYTES``, only so the
    connection can carry the next delivery; a longer one closes it (a reply may be any size)."""
    body, headers = signed
    async with client.stream("POST", url, content=body, headers=headers) as response:
        read = 0
        if not response.is_stream_consumed:  # handed over already read: no connection to free
            async for chunk in response.aiter_raw():
                read += len(chunk)
                if read > DRAINED_BYTES:
                    break
        return response.status_code
