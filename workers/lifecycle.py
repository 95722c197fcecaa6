"""Worker start-up and shut-down: migrate the store and start the sweeper in the main process,
build the judge once in every pool process after the fork, stop the sweeper at the end.

``connect`` is called by ``workers.app.get_app`` with the app it made: this module never
imports ``workers.app``, so the two do not import each other.
"""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init, worker_process_init, worker_ready, worker_shutdown

from grader.config import ServiceSettings
from grader.service.store import Store
from workers.runtime import runtime
from workers.sweeper import Sweeper


class Lifecycle:
    """The hooks of one worker process, holding its app, settings and sweeper."""

    def __init__(self, app: Celery, settings: ServiceSettings):
        self.app, self.settings = app, settings
        self.sweeper: Sweeper | None = None

    def migrate(self, sender=None, **_) -> None:
        Store(self.settings.database_url).migrate()

    def load_runtime(self, **_) -> None:
        rt = runtime()
        if os.environ.get("GRADER_WORKER_LOADS_JUDGE", "1") == "1":
            rt.graders  # noqa: B018 - load the judge now, not in the first task

    def start_sweeper(self, sender=None, **_) -> None:
        self.sweeper = Sweeper(self.app, self.settings)
        self.sweeper.start()

    def stop_sweeper(self, **_) -> None:
        if self.sweeper is not None:
            self.sweeper.stop()


def connect(app: Celery, settings: ServiceSettings) -> Lifecycle:
    """Connect the worker's hooks for ``app`` (strongly: the receivers are bound methods)."""
    hooks = Lifecycle(app, settings)
    worker_init.connect(hooks.migrate, weak=False)
    worker_process_init.connect(hooks.load_runtime, weak=False)
    worker_ready.connect(hooks.start_sweeper, weak=False)
    worker_shutdown.connect(hooks.stop_sweeper, weak=False)
    return hooks
