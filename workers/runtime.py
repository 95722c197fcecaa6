"""What a worker process holds: the store and the graders (judge + pipelines), built once.

Built in ``worker_process_init``, i.e. in each pool process after the fork: a CUDA context or a
database connection made before the fork would be shared, broken, by every child. A worker
that only sends webhooks (``grader worker --queues io``) never loads the judge.
"""

from __future__ import annotations

from functools import cached_property

import httpx

from grader.config import Settings
from grader.service.exams import Graders
from grader.service.store import Store
from grader.service.webhook_transport import webhook_client


class Runtime:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.store = Store(settings.service.database_url)

    @cached_property
    def graders(self) -> Graders:
        return Graders.load(self.settings)

    @cached_property
    def http(self) -> httpx.Client:
        """One client per process for webhooks: building one costs tens of milliseconds."""
        return webhook_client(
            self.settings.webhooks.timeout_s, self.settings.webhooks.allow_private
        )


_runtime: Runtime | None = None


def runtime() -> Runtime:
    """This process's runtime, built on first use (the solo pool has no process-init hook)."""
    global _runtime
    if _runtime is None:
        _runtime = Runtime(Settings())
    return _runtime
