"""Finds grading work whose message may be lost and enqueues it again.

The API stores a submission before it sends its task, and a task can still vanish: Redis
restarted before persisting it, or the API died between commit and send. A submission still
``queued`` after ``GRADER_SWEEP_AFTER_S`` gets a new task, and so does a regrade job that no
process has worked on for that long. Claims in the store keep two sweepers from doubling the
work, and a duplicate task is harmless anyway: grading skips submissions already graded.
(Webhooks need no sweeping: couriers send whatever the outbox holds due.)

The grading queue is left alone while messages wait in it on the broker: its work is late
because the workers are behind, not lost, and sending it again only lengthens the queue (the
fault soak saw a backlog of 3,000 tasks turn into 8,700, two thirds of them sent again by the
sweeper). What was lost is swept once the backlog has drained.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta

from celery import Celery

from grader.config import ServiceSettings
from grader.service.batches import chunks
from grader.service.store import Store
from workers import queues
from workers.queues import GRADE_QUEUE, GRADE_TASK, REGRADE_TASK

log = logging.getLogger(__name__)


class Sweeper:
    def __init__(
        self, app: Celery, settings: ServiceSettings, waiting: Callable[[str], int] | None = None
    ):
        self.app, self.settings = app, settings
        self._waiting = waiting or (
            lambda queue: queues.waiting(settings.redis_url, (queue,))[queue]
        )
        self.store = Store(settings.database_url)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sweeper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def sweep(self) -> int:
        """One pass: the submissions and regrade jobs enqueued again."""
        if self._waiting(GRADE_QUEUE):
            return 0
        after = timedelta(seconds=self.settings.sweep_after_s)
        stale = self.store.queue.claim_stale(after)
        for ids in chunks(stale, self.settings.batch_size):
            self.app.send_task(GRADE_TASK, args=[ids], queue=GRADE_QUEUE)
        jobs = [] if stale else self.store.regrades.waiting(after)  # their task was lost
        for job_id in jobs:
            self.app.send_task(REGRADE_TASK, args=[job_id], queue=GRADE_QUEUE)
        if stale or jobs:
            log.warning(
                "sweeper re-enqueued %d submission(s), %d regrade(s)", len(stale), len(jobs)
            )
        return len(stale) + len(jobs)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sweep()
            except Exception:  # the broker or the database is down: try again next round
                log.exception("sweep failed")
            self._stop.wait(self.settings.sweep_interval_s)
