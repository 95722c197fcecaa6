"""Worker start-up: migrate the store, start the sweeper (main process), and build the judge
once in every pool process after the fork."""

from __future__ import annotations

from celery.signals import worker_init, worker_process_init, worker_ready, worker_shutdown

_sweeper = None


@worker_init.connect
def _migrate(sender=None, **_):
    from grader.store import Store
    from workers.app import settings

    Store(settings.database_url).migrate()


@worker_process_init.connect
def _load_runtime(**_):
    import os

    from workers.runtime import runtime

    rt = runtime()
    if os.environ.get("GRADER_WORKER_LOADS_JUDGE", "1") == "1":
        rt.graders  # noqa: B018 - load the judge now, not in the first task


@worker_ready.connect
def _start_sweeper(sender=None, **_):
    global _sweeper
    from workers.app import app, settings
    from workers.sweeper import Sweeper

    _sweeper = Sweeper(app, settings)
    _sweeper.start()


@worker_shutdown.connect
def _stop_sweeper(**_):
    if _sweeper is not None:
        _sweeper.stop()
