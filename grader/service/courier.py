"""Webhooks sent off the grading path (inline mode): a platform whose endpoint is slow, or
accepts and never answers, holds up its own deliveries only.

The grading thread hands due deliveries to a small pool and returns to grading at once. At
most ``webhook_concurrency`` deliveries are in flight, at most ``webhook_per_host`` of them to
one host (scheme, host and port), and each try is bounded by ``webhook_timeout_s``; a delivery
left for later (its host busy, the pool full) stays due in the outbox and is offered again.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import httpx

from grader.config import WebhookSettings
from grader.service.store import Store
from grader.service.webhook_transport import webhook_client
from grader.service.webhooks import deliver

log = logging.getLogger(__name__)


def host_of(url: str | None) -> str:
    """The host a delivery goes to, as its per-host limit counts it."""
    if not url:
        return ""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class Courier:
    """Delivers due webhooks on its own threads, bounded in all and per host."""

    def __init__(self, webhooks: WebhookSettings, backoff_s: float, store: Store):
        """``backoff_s``: the first retry's delay (``GRADER_RETRY_BACKOFF_S``, shared with the
        grading tasks)."""
        self.webhooks, self.backoff_s, self.store = webhooks, backoff_s, store
        self._limit, self._per_host = webhooks.concurrency, webhooks.per_host
        self._http = webhook_client(
            webhooks.timeout_s,
            webhooks.allow_private,
            limits=httpx.Limits(max_connections=self._limit, max_keepalive_connections=self._limit),
        )
        self._pool = ThreadPoolExecutor(self._limit, thread_name_prefix="webhook")
        self._lock = threading.Lock()
        self._in_flight: set[int] = set()
        # tries that ended while ``send_due`` read the outbox: what it read of them may be stale
        self._finished: set[int] = set()
        self._hosts: Counter[str] = Counter()

    def send_due(self) -> list[int]:
        """Start the due deliveries there is room for; returns the ids started."""
        started = []
        with self._lock:
            self._finished.clear()
        for delivery_id, url in self.store.outbox.due_destinations():
            host = host_of(url)
            with self._lock:
                if len(self._in_flight) >= self._limit:
                    break
                busy = delivery_id in self._in_flight or delivery_id in self._finished
                if busy or self._hosts[host] >= self._per_host:
                    continue
                self._in_flight.add(delivery_id)
                self._hosts[host] += 1
            self._pool.submit(self._send, delivery_id, host)
            started.append(delivery_id)
        return started

    def in_flight(self) -> int:
        with self._lock:
            return len(self._in_flight)

    def close(self) -> None:
        """Stop taking deliveries; those in flight end within their timeout."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._http.close()

    def _send(self, delivery_id: int, host: str) -> None:
        try:
            deliver(
                self.store,
                delivery_id,
                client=self._http,
                retries=self.webhooks.retries,
                backoff_s=self.backoff_s,
            )
        except Exception:  # the store failed: the delivery stays pending, offered again
            log.exception("webhook delivery %d failed; it stays in the outbox", delivery_id)
        finally:
            with self._lock:
                self._in_flight.discard(delivery_id)
                self._finished.add(delivery_id)
                self._hosts[host] -= 1
                if not self._hosts[host]:
                    del self._hosts[host]
