"""Quotas, each answered 429 with ``Retry-After``: requests per minute with one API key, a
platform's queued submissions, and failed instructor logins per client address.

Every count lives in the database (``store.counters``, the queued rows themselves), so all API
processes agree on it, in ``--inline`` mode and with workers alike.
"""

from __future__ import annotations

from fastapi import HTTPException, Request

from grader.api.proxy import client_address
from grader.config import LimitSettings, Settings
from grader.service.store import QueueFull, Store

WINDOW_S = 60
QUEUE_FULL_RETRY_S = 30  # no telling when the backlog drains: a short, polite pause


class TooMany(HTTPException):
    def __init__(self, detail: str, retry_after_s: int):
        super().__init__(429, detail, headers={"Retry-After": str(retry_after_s)})


def count_request(limits: LimitSettings, store: Store, key_id: str) -> None:
    """Count a request made with an API key; TooMany past GRADER_RATE_LIMIT_PER_MINUTE."""
    limit = limits.rate_limit_per_minute
    if not limit:
        return
    window = store.counters.hit(f"key:{key_id}", WINDOW_S)
    if window.count > limit:
        raise TooMany(
            f"more than {limit} requests a minute with this API key "
            f"(GRADER_RATE_LIMIT_PER_MINUTE): retry in {window.retry_after_s} s",
            window.retry_after_s,
        )


def queue_full(exc: QueueFull) -> TooMany:
    return TooMany(str(exc), QUEUE_FULL_RETRY_S)


def _login_counter(settings: Settings, request: Request) -> str:
    return f"login:{client_address(request, settings.pages.trust_proxy)}"


def login_wait_s(settings: Settings, store: Store, request: Request) -> int | None:
    """Seconds this client must wait before trying a login key again, or None when it may; the
    client is the TCP peer, or X-Forwarded-For's first address with GRADER_TRUST_PROXY."""
    window = store.counters.count(_login_counter(settings, request), WINDOW_S)
    return (
        window.retry_after_s if window.count >= settings.limits.login_failures_per_minute else None
    )


def login_failed(settings: Settings, store: Store, request: Request) -> None:
    store.counters.hit(_login_counter(settings, request), WINDOW_S)
