"""Sends the outbox's webhooks, many at once, from one thread of the process that runs it: the
``grader serve --inline`` process, or the main process of a worker consuming ``io``.

An event loop of its own runs up to ``GRADER_WEBHOOK_CONCURRENCY`` deliveries at once over one
asynchronous client (a bounded connection pool), at most ``GRADER_WEBHOOK_PER_HOST`` of them to
one host (scheme, host and port), so a platform whose endpoint hangs holds only its own share;
each try is bounded by ``GRADER_WEBHOOK_TIMEOUT_S``. The store is read and written on a few
worker threads, in batches: the deliveries claimed together are read in one query, and the
outcomes of tries that end together are written in one transaction. When a try ends the
courier looks for more at once; idle, it looks every ``poll_s``, and ``wake()`` makes it look
now (grades were just committed).

At least once, in order: a delivery is claimed for one try with a lease (``Outbox.claim_due``),
so two couriers (two workers) never send it together, and one whose courier died is due again
when the lease ends; it is settled only after the receiver's answer (``Outbox.settle``). A
submission's deliveries, one per grade version, go in version order: one waits while an
earlier one of its submission is pending. The courier knows nothing of events or versions:
whatever the outbox holds, it sends (``webhooks.payload`` says what).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from urllib.parse import urlsplit

import httpx

from grader.config import WebhookSettings
from grader.service.outages import database_unavailable
from grader.service.store import Delivery, Store
from grader.service.webhook_transport import webhook_client
from grader.service.webhooks import Attempt, attempt, settle

log = logging.getLogger(__name__)

CANDIDATES = 4  # outbox rows read per free slot: room to skip the hosts that are full
STORE_THREADS = 8  # the store's calls at once (each holds a database connection)
LEASE_MARGIN_S = 30.0  # a claim outlives its try by this: the try's own writes fit in it
RECORD_EVERY_S = 0.02  # tries that end within this are recorded in one transaction


def host_of(url: str | None) -> str:
    """The host a delivery goes to, as its per-host limit counts it."""
    if not url:
        return ""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class Courier:
    """Delivers due webhooks on an event loop of its own thread, bounded in all and per host."""

    def __init__(
        self, webhooks: WebhookSettings, backoff_s: float, store: Store, poll_s: float = 0.25
    ):
        """``backoff_s``: the first retry's delay (``GRADER_RETRY_BACKOFF_S``, shared with the
        grading tasks)."""
        self.webhooks, self.backoff_s, self.store, self.poll_s = webhooks, backoff_s, store, poll_s
        self.lease = timedelta(seconds=webhooks.timeout_s + LEASE_MARGIN_S)
        self._limit, self._per_host = webhooks.concurrency, webhooks.per_host
        self._in_flight: dict[int, str] = {}  # delivery id: its host
        self._hosts: Counter[str] = Counter()
        self._ended: list[Attempt] = []  # tries that ended, not yet recorded
        self._closing = False
        self._loop = asyncio.new_event_loop()
        self._loop.set_default_executor(ThreadPoolExecutor(STORE_THREADS, "webhook-store"))
        self._wake = asyncio.Event()
        self._thread = threading.Thread(target=self._run, name="webhooks", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Look at the outbox now (thread-safe; returns at once)."""
        with contextlib.suppress(RuntimeError):  # the loop has ended: nothing to wake
            self._loop.call_soon_threadsafe(self._wake.set)

    def in_flight(self) -> int:
        return len(self._in_flight)

    def close(self) -> None:
        """Take no more deliveries; those in flight end within their timeout."""
        self._closing = True
        self.wake()
        self._thread.join(self.webhooks.timeout_s + 10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()

    async def _main(self) -> None:
        limits = httpx.Limits(max_connections=self._limit, max_keepalive_connections=self._limit)
        client = webhook_client(self.webhooks.timeout_s, self.webhooks.allow_private, limits=limits)
        tries: set[asyncio.Task] = set()
        done = asyncio.Event()
        recorder = asyncio.create_task(self._record(done))
        async with client:
            while not self._closing:
                self._wake.clear()
                pause = self.poll_s
                try:
                    for delivery in await self._claim():
                        task = asyncio.create_task(self._send(client, delivery))
                        tries.add(task)
                        task.add_done_callback(tries.discard)
                except Exception as exc:  # the database is away: look again after a while
                    _log_store_error(exc, "could not read the webhook outbox; trying again")
                    pause = max(pause, self.backoff_s)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), pause)
            if tries:
                await asyncio.wait(tries, timeout=self.webhooks.timeout_s + 5)
        done.set()
        await recorder

    async def _claim(self) -> list[Delivery]:
        """Claim as many due deliveries as there is room for, skipping full hosts."""
        room = self._limit - len(self._in_flight)
        if room <= 0:
            return []
        hosts = Counter(self._hosts)  # read on the loop; the claim's thread picks with a copy

        def pick(due: list[tuple[int, str]]) -> list[int]:
            picked = []
            for delivery_id, url in due:
                host = host_of(url)
                if hosts[host] < self._per_host:
                    picked.append(delivery_id)
                    hosts[host] += 1
                    if len(picked) == room:
                        break
            return picked

        claimed = await asyncio.to_thread(
            self.store.outbox.claim_due, room * CANDIDATES, self.lease, pick
        )
        for delivery in claimed:
            host = host_of(delivery.url)
            self._in_flight[delivery.id] = host
            self._hosts[host] += 1
        return claimed

    async def _send(self, client: httpx.AsyncClient, delivery: Delivery) -> None:
        try:
            tried = await attempt(client, delivery, self.webhooks.timeout_s)
            self._ended.append(tried)  # the list as it is now: the recorder swaps it
        finally:
            host = self._in_flight.pop(delivery.id)
            self._hosts[host] -= 1
            if not self._hosts[host]:
                del self._hosts[host]
            self._wake.set()

    async def _record(self, done: asyncio.Event) -> None:
        """Write the outcomes of the tries that ended, a batch every ``RECORD_EVERY_S``, until
        ``done`` (no try left). A batch the store refuses is dropped: its deliveries are due
        again when their leases end (at least once)."""
        while True:
            finished = done.is_set()  # then every try has ended: the batch below is the last
            ended, self._ended = self._ended, []
            if ended:
                try:
                    await asyncio.to_thread(
                        settle, self.store, ended, self.webhooks.retries, self.backoff_s
                    )
                except Exception as exc:
                    _log_store_error(exc, f"could not record {len(ended)} webhook tries")
            if finished:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), RECORD_EVERY_S)


def _log_store_error(error: Exception, what: str) -> None:
    if database_unavailable(error):
        log.warning("%s: the database is unavailable (%s)", what, error)
    else:
        log.exception(what)
