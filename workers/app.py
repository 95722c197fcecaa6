"""The Celery app: Redis broker, late acknowledgement, two queues.

``grade`` runs ``grade_batch`` (the judge; one process per GPU), ``io`` runs webhooks. A task
is acknowledged only after it has finished (``acks_late``), and a task whose worker process
died is requeued (``reject_on_worker_lost``): a SIGKILLed worker's batch is graded again by
another, and the store's idempotent writes keep one grade per submission. On Redis an
unacknowledged message is redelivered after ``visibility_timeout``
(``GRADER_VISIBILITY_TIMEOUT_S``), so it must exceed the longest batch.
"""

from __future__ import annotations

import logging

from celery import Celery

from grader.config import Settings


def make_app(settings: Settings) -> Celery:
    app = Celery("grader", broker=settings.redis_url, include=["workers.tasks"])
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,  # results live in the store
        task_serializer="json",
        accept_content=["json"],
        task_default_queue="grade",
        task_routes={
            "workers.tasks.grade_batch": {"queue": "grade"},
            "workers.tasks.deliver_webhook": {"queue": "io"},
        },
        worker_prefetch_multiplier=1,  # a busy process does not sit on batches others could run
        broker_transport_options={
            "visibility_timeout": settings.visibility_timeout_s,
            # Kombu scans for messages past their visibility timeout every interval × throttle
            # seconds (default 100 s); scan every quarter timeout (at most a minute) instead.
            "unacked_restore_interval": max(1, min(60, settings.visibility_timeout_s // 4)),
            "unacked_restore_throttle": 1,
            # The scan holds a Redis lock; a worker killed while holding it would stop every
            # other worker's scans until the lock expires (default 300 s). A scan takes
            # milliseconds.
            "unacked_mutex_expire": max(5, min(30, settings.visibility_timeout_s // 4)),
            "socket_connect_timeout": 5,
        },
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,  # keep reconnecting while Redis restarts
        # True would cancel running tasks when Redis goes away, and in this Celery/Kombu
        # version that path can crash the worker (celery/celery#9250; seen here in the
        # Redis-restart test). Left False, a task finishes, its ack is lost with the
        # connection, and Redis redelivers it after the visibility timeout: grading it
        # again stores nothing new.
        worker_cancel_long_running_tasks_on_connection_loss=False,
        worker_hijack_root_logger=False,
    )
    return app


settings = Settings()
app = make_app(settings)
logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per webhook is noise

import workers.signals  # noqa: E402, F401 - connects the worker's start-up hooks
