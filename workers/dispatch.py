"""The API's side of the queue: stored submissions sent to the workers as grading tasks.

Single posts arriving together are gathered into batches first (``grader.service.dispatch``),
so one task grades them with one ``grade_many``.
"""

from __future__ import annotations

from celery import Celery

from grader.config import Settings
from grader.service.batches import chunks
from grader.service.dispatch import Gatherer
from grader.service.store import StoredSubmission
from workers.app import create_app
from workers.queues import GRADE_QUEUE, GRADE_TASK, REGRADE_TASK, waiting


class CeleryDispatcher:
    """Sends grading tasks to the Redis broker the workers consume."""

    def __init__(self, settings: Settings, app: Celery | None = None):
        self.settings = settings
        # The process's only app unless one is given: nothing else here builds one.
        self.app = app or create_app(settings)
        self._gatherer = Gatherer(
            self._send, settings.service.batch_size, settings.service.batch_wait_ms / 1000
        )

    def enqueue(self, submissions: list[StoredSubmission]) -> None:
        self._gatherer.add(submissions)

    def _send(self, submissions: list[StoredSubmission]) -> None:
        for ids in chunks(submissions, self.settings.service.batch_size):
            self.app.send_task(GRADE_TASK, args=[ids], queue=GRADE_QUEUE)

    def announce(self, deliveries: list[int]) -> None:
        """Nothing to send: the couriers of the workers consuming ``io`` read the outbox
        every ``poll_s`` and find these there (``workers.lifecycle``)."""

    def regrade(self, job_id: int) -> None:
        self.app.send_task(REGRADE_TASK, args=[job_id], queue=GRADE_QUEUE)

    def broker_ok(self) -> bool:
        try:
            with self.app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1, timeout=2)
            return True
        except Exception:
            return False

    def queue_depth(self) -> dict[str, int]:
        return waiting(self.settings.service.redis_url)

    def close(self) -> None:
        self._gatherer.close()
