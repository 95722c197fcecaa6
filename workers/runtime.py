"""What a worker process holds: the store and the graders (judge + pipelines), built once.

Built in ``worker_process_init``, i.e. in each pool process after the fork: a CUDA context or a
database connection made before the fork would be shared, broken, by every child. A worker
that only sends webhooks (``grader worker --queues io``) never loads the judge: its courier
runs in its main process (``workers.lifecycle``).
"""

from __future__ import annotations

from functools import cached_property

from grader.config import Settings
from grader.service.exams import Graders
from grader.service.store import Store


class Runtime:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.store = Store(settings.service.database_url)

    @cached_property
    def graders(self) -> Graders:
        return Graders.load(self.settings)


_runtime: Runtime | None = None


def runtime() -> Runtime:
    """This process's runtime, built on first use (the solo pool has no process-init hook)."""
    global _runtime
    if _runtime is None:
        _runtime = Runtime(Settings())
    return _runtime
