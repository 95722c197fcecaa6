"""Worker start-up and shut-down: migrate the store and start the sweeper in the main process,
build the judge once in every pool process after the fork, and, when the worker consumes
``io``, run the webhook courier in every process that runs tasks; stop them at the end.

The courier (``grader.service.courier``) sends the outbox's webhooks many at once from a thread
of its process, so ``grader worker --queues io --concurrency N`` has N couriers, each with up
to ``GRADER_WEBHOOK_CONCURRENCY`` deliveries in flight (one per pool process; in the main
process with the solo pool). They share the outbox by claims: a pool process that dies takes
no delivery with it for longer than its lease.

``connect`` is called by ``workers.app.get_app`` with the app it made: this module never
imports ``workers.app``, so the two do not import each other.
"""

from __future__ import annotations

import os

from celery import Celery
from celery.concurrency.prefork import TaskPool as PreforkPool
from celery.signals import (
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
)

from grader.config import Settings
from grader.service.courier import Courier
from grader.service.store import Store
from workers.queues import IO_QUEUE
from workers.runtime import runtime
from workers.sweeper import Sweeper


class Lifecycle:
    """The hooks of one worker, holding its app, settings, sweeper and (per process) courier."""

    def __init__(self, app: Celery, settings: Settings):
        self.app, self.settings = app, settings
        self.sweeper: Sweeper | None = None
        self.courier: Courier | None = None

    def migrate(self, sender=None, **_) -> None:
        Store(self.settings.service.database_url).migrate()

    def start_pool_process(self, **_) -> None:
        """In each pool process after the fork: the judge, loaded now (not in the first task),
        and the courier."""
        rt = runtime()
        if os.environ.get("GRADER_WORKER_LOADS_JUDGE", "1") == "1":
            rt.graders  # noqa: B018 - load the judge now, not in the first task
        self.start_courier()

    def start_background(self, sender=None, **_) -> None:
        """In the main process once the worker is up: the sweeper, and the courier when no
        pool process runs one (the solo pool runs tasks in this process)."""
        self.sweeper = Sweeper(self.app, self.settings.service)
        self.sweeper.start()
        if not isinstance(getattr(sender, "pool", None), PreforkPool):
            self.start_courier()

    def start_courier(self) -> None:
        if IO_QUEUE in self.app.amqp.queues.consume_from and self.courier is None:
            service = self.settings.service
            self.courier = Courier(
                self.settings.webhooks, service.retry_backoff_s, Store(service.database_url)
            )

    def stop_courier(self, **_) -> None:
        """The deliveries in flight end (within their timeout); the rest wait in the outbox."""
        if self.courier is not None:
            self.courier.close()
            self.courier = None

    def stop_background(self, **_) -> None:
        if self.sweeper is not None:
            self.sweeper.stop()
        self.stop_courier()


def connect(app: Celery, settings: Settings) -> Lifecycle:
    """Connect the worker's hooks for ``app`` (strongly: the receivers are bound methods)."""
    hooks = Lifecycle(app, settings)
    worker_init.connect(hooks.migrate, weak=False)
    worker_process_init.connect(hooks.start_pool_process, weak=False)
    worker_process_shutdown.connect(hooks.stop_courier, weak=False)
    worker_ready.connect(hooks.start_background, weak=False)
    worker_shutdown.connect(hooks.stop_background, weak=False)
    return hooks
