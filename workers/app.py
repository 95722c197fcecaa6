"""The Celery app: Redis broker, late acknowledgement, two queues (``workers.queues``).

``grade`` runs ``grade_batch`` (the judge; one process per GPU); a worker consuming ``io``
sends the webhooks (its courier, ``workers.lifecycle``). A task
is acknowledged only after it has finished (``acks_late``), and a task whose worker process
died is requeued (``reject_on_worker_lost``): a SIGKILLed worker's batch is graded again by
another, and the store's idempotent writes keep one grade per submission. On Redis an
unacknowledged message is redelivered after ``visibility_timeout``
(``GRADER_VISIBILITY_TIMEOUT_S``), so it must exceed the longest batch.

Importing this module builds no app. ``create_app(settings)`` makes one (the API's dispatcher
makes its own, the only one in that process); ``get_app()`` is the worker process's app, made
on first use with the worker's start-up hooks, and is what ``celery -A workers.app`` finds as
``workers.app.app``.
"""

from __future__ import annotations

import logging

from celery import Celery

from grader.config import Settings
from workers import broker, lifecycle, tasks
from workers.queues import GRADE_QUEUE, ROUTES


def create_app(settings: Settings) -> Celery:
    """A Celery app on ``settings.service.redis_url`` with the service's tasks registered."""
    app = Celery("grader", broker=settings.service.redis_url)
    app.conf.update(
        # Celery's default gives up sending a task within a second; a restarting Redis is
        # given about a minute (the API's gatherer and a task's retry wait meanwhile).
        task_publish_retry_policy=tasks.PUBLISH_RETRY,
        # kombu's Redis transport, guarded so that a worker holding an unacknowledged task
        # reconnects when Redis restarts instead of stopping (``workers.broker``)
        broker_transport=broker.NAME,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,  # results live in the store
        task_serializer="json",
        accept_content=["json"],
        task_default_queue=GRADE_QUEUE,
        task_routes={task: {"queue": queue} for task, queue in ROUTES.items()},
        worker_prefetch_multiplier=1,  # a busy process does not sit on batches others could run
        # Task events from the start, so a monitor (`grader flower`) sees every task a worker
        # ran, not only those after it asked the workers to send events.
        worker_send_task_events=True,
        task_send_sent_event=True,
        broker_transport_options={
            "visibility_timeout": settings.service.visibility_timeout_s,
            # Kombu scans for messages past their visibility timeout every interval × throttle
            # seconds (default 100 s); scan every quarter timeout (at most a minute) instead.
            "unacked_restore_interval": max(1, min(60, settings.service.visibility_timeout_s // 4)),
            "unacked_restore_throttle": 1,
            # The scan holds a Redis lock; a worker killed while holding it would stop every
            # other worker's scans until the lock expires (default 300 s). A scan takes
            # milliseconds.
            "unacked_mutex_expire": max(5, min(30, settings.service.visibility_timeout_s // 4)),
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
        # Each pool process loads the judge before it reports up; Celery kills one that takes
        # longer than this (its default, 4 s, is shorter than any model judge's load) and kills
        # its replacement too, so a worker whose child died would never grade again.
        worker_proc_alive_timeout=settings.service.worker_start_timeout_s,
    )
    tasks.register(app, settings)
    return app


_app: Celery | None = None


def get_app() -> Celery:
    """This worker process's app, from the environment's settings, made once with the
    start-up hooks (migrate, the judge after the fork, the sweeper)."""
    global _app
    if _app is None:
        settings = Settings()
        logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per webhook is noise
        _app = create_app(settings)
        lifecycle.connect(_app, settings)
    return _app


def __getattr__(name: str) -> Celery:
    """``celery -A workers.app worker`` looks for ``workers.app.app``: made when asked."""
    if name == "app":
        return get_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
