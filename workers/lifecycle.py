"""Worker start-up and shut-down: migrate the store, then in the main process the sweeper and,
when the worker consumes ``io``, the webhook courier; build the judge once in every pool
process after the fork; stop the sweeper and the courier at the end.

The courier (``grader.service.courier``) sends the outbox's webhooks many at once from a thread
of the main process: no pool process is busy with them, so a worker consuming ``io`` needs
one process (``grader worker --queues io`` runs the solo pool), and a pool process that dies
takes no delivery with it.

``connect`` is called by ``workers.app.get_app`` with the app it made: this module never
imports ``workers.app``, so the two do not import each other.
"""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init, worker_process_init, worker_ready, worker_shutdown

from grader.config import Settings
from grader.service.courier import Courier
from grader.service.store import Store
from workers.queues import IO_QUEUE
from workers.runtime import runtime
from workers.sweeper import Sweeper


class Lifecycle:
    """The hooks of one worker process, holding its app, settings, sweeper and courier."""

    def __init__(self, app: Celery, settings: Settings):
        self.app, self.settings = app, settings
        self.sweeper: Sweeper | None = None
        self.courier: Courier | None = None

    def migrate(self, sender=None, **_) -> None:
        Store(self.settings.service.database_url).migrate()

    def load_runtime(self, **_) -> None:
        rt = runtime()
        if os.environ.get("GRADER_WORKER_LOADS_JUDGE", "1") == "1":
            rt.graders  # noqa: B018 - load the judge now, not in the first task

    def start_background(self, sender=None, **_) -> None:
        """The sweeper; the courier too when this worker consumes ``io``."""
        self.sweeper = Sweeper(self.app, self.settings.service)
        self.sweeper.start()
        if IO_QUEUE in self.app.amqp.queues.consume_from:
            service = self.settings.service
            self.courier = Courier(
                self.settings.webhooks, service.retry_backoff_s, Store(service.database_url)
            )

    def stop_background(self, **_) -> None:
        if self.sweeper is not None:
            self.sweeper.stop()
        if self.courier is not None:
            self.courier.close()


def connect(app: Celery, settings: Settings) -> Lifecycle:
    """Connect the worker's hooks for ``app`` (strongly: the receivers are bound methods)."""
    hooks = Lifecycle(app, settings)
    worker_init.connect(hooks.migrate, weak=False)
    worker_process_init.connect(hooks.load_runtime, weak=False)
    worker_ready.connect(hooks.start_background, weak=False)
    worker_shutdown.connect(hooks.stop_background, weak=False)
    return hooks
