"""How the API hands stored submissions to graders: Celery tasks (``workers.dispatch``), or a
thread in this process (``InlineDispatcher``), or a process of its own beside the API
(``grader.service.inline_process``, what ``grader serve --inline`` runs), behind one protocol.

Either way the submission rows are committed first, so a dispatch that is lost (the API dies
while gathering, Redis restarts before persisting the message) loses no work: the rows stay
``queued`` and the workers' sweeper enqueues them again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Protocol

from grader.config import Settings
from grader.service import regrades
from grader.service.batches import chunks, grade_stored
from grader.service.courier import Courier
from grader.service.exams import Graders
from grader.service.store import Store, StoredSubmission

log = logging.getLogger(__name__)


class Dispatcher(Protocol):
    def enqueue(self, submissions: list[StoredSubmission]) -> None: ...
    def announce(self, deliveries: list[int]) -> None:
        """These webhook deliveries are committed (grade versions made off the grading path:
        the instructor pages): send them now where the sender can be told, rather than at
        its next look at the outbox."""
        ...

    def regrade(self, job_id: int) -> None:
        """Have a grading process work this regrade job (``service.regrades``)."""
        ...

    def broker_ok(self) -> bool: ...
    def queue_depth(self) -> dict[str, int]: ...
    def close(self) -> None: ...


class Gatherer:
    """Collects submissions for up to ``wait_s`` or ``size`` of them, then flushes them as
    batches: single posts arriving together are graded by one ``grade_many``."""

    def __init__(self, flush, size: int, wait_s: float):
        self._flush, self._size, self._wait_s = flush, size, wait_s
        self._items: list[StoredSubmission] = []
        self._first_at = 0.0
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="gatherer", daemon=True)
        self._thread.start()

    def add(self, items: list[StoredSubmission]) -> None:
        with self._cond:
            if not self._items:
                self._first_at = time.monotonic()
            self._items += items
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closed:
                    if self._items:
                        left = self._first_at + self._wait_s - time.monotonic()
                        if left <= 0 or len(self._items) >= self._size:
                            break
                        self._cond.wait(left)
                    else:
                        self._cond.wait()
                items, self._items = self._items, []
                closed = self._closed
            if items:
                try:
                    self._flush(items)
                except Exception:  # the rows are stored; the sweeper will enqueue them
                    log.exception(
                        "could not enqueue %d submission(s); left to the sweeper", len(items)
                    )
            if closed:
                return


class GradingLoop:
    """Grades every submission the store holds ``queued``, batch by batch, until ``stop``:
    the loop ``InlineDispatcher`` runs on a thread and the inline grading process runs alone.

    It polls the store rather than an in-memory queue, so after a restart it picks up every
    submission still queued, and after them one batch of a waiting regrade each round;
    ``before_batch`` gets each batch's ids before it is graded, ``after_batch`` runs once its
    grades are committed (and once a round, for webhook retries that came due).
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        graders: Graders,
        after_batch: Callable[[], object],
        before_batch: Callable[[list[int]], object] = lambda ids: None,
    ):
        self.settings, self.store, self.graders = settings, store, graders
        self._after_batch, self._before_batch = after_batch, before_batch

    def run(self, wake: threading.Event, stop: threading.Event, poll_s: float) -> None:
        more = False  # a regrade has batches left: the next round at once
        while not stop.is_set():
            if not more:
                wake.wait(poll_s)
            wake.clear()
            try:
                more = self._tick(stop)
            except Exception:
                more = False
                log.exception("inline grading failed; retrying")
                stop.wait(self.settings.service.retry_backoff_s)

    def _tick(self, stop: threading.Event) -> bool:
        pending = self.store.queue.claim_stale(older_than=timedelta(0))
        retry = False
        for ids in chunks(pending, self.settings.service.batch_size):
            self._before_batch(ids)
            outcome = grade_stored(self.store, self.graders, ids)
            retry = retry or bool(outcome.retry)
            self._after_batch()
        # then one batch of a waiting regrade: new answers never wait for a whole one
        regraded = regrades.step(
            self.store, self.graders, regrades.stale_after(self.graders),
            before_batch=self._before_batch,
        )  # fmt: skip
        self._after_batch()
        if retry or regraded.retry:
            stop.wait(self.settings.service.retry_backoff_s)  # the judge is unreachable
            return False
        return regraded.job is not None and not regraded.job.finished


class InlineDispatcher:
    """No Redis: one thread of this process grades queued submissions from the store
    (``GradingLoop``) and wakes a ``Courier``, which sends the webhooks on its own thread (a
    slow platform stalls no grading). ``grader serve --inline`` grades in a
    process of its own instead (``InlineProcess``), so no answer can stall the intake.
    """

    def __init__(self, settings: Settings, store: Store, graders: Graders, poll_s: float = 1.0):
        self.settings, self.store, self.graders = settings, store, graders
        self._poll_s = poll_s
        self.courier = Courier(settings.webhooks, settings.service.retry_backoff_s, store)
        # the courier returns at once: its own thread sends the webhooks
        self._loop = GradingLoop(settings, store, graders, after_batch=self.courier.wake)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop.run,
            args=(self._wake, self._stop, poll_s),
            name="inline-grader",
            daemon=True,
        )
        self._thread.start()

    def enqueue(self, submissions: list[StoredSubmission]) -> None:
        self._wake.set()

    def announce(self, deliveries: list[int]) -> None:
        """The courier looks at the outbox now (it would within ``poll_s`` anyway)."""
        if deliveries:
            self.courier.wake()

    def regrade(self, job_id: int) -> None:
        self._wake.set()  # the loop takes waiting regrades after the queued answers

    def broker_ok(self) -> bool:
        return self._thread.is_alive()

    def queue_depth(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=30)
        self.courier.close()
        self.graders.close()
