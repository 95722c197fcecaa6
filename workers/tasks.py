"""The tasks: thin — load ids, call the shared grading step, persist, acknowledge.

Plain functions, registered on an app by ``register`` (called by ``workers.app.create_app``)
under the names in ``workers.queues``, so importing this module builds no app.
"""

from __future__ import annotations

import logging

from celery import Celery, Task

from grader.config import Settings
from grader.service import regrades
from grader.service.batches import grade_stored
from grader.service.outages import database_unavailable
from grader.service.webhooks import backoff, deliver
from workers.queues import GRADE_QUEUE, GRADE_TASK, IO_QUEUE, REGRADE_TASK, WEBHOOK_TASK
from workers.runtime import runtime

log = logging.getLogger(__name__)


class DeadLetterOnFailure(Task):
    """After the last retry the batch is recorded as dead and its submissions as failed."""

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        ids = args[0] if args else kwargs.get("ids", [])
        runtime().store.queue.dead_letter(self.name, ids, f"{type(exc).__name__}: {exc}")


def register(app: Celery, settings: Settings) -> None:
    app.task(
        name=GRADE_TASK,
        bind=True,
        base=DeadLetterOnFailure,
        max_retries=settings.service.task_retries,
        shared=False,
    )(grade_batch)
    app.task(name=WEBHOOK_TASK, bind=True, max_retries=settings.service.task_retries, shared=False)(
        deliver_webhook
    )
    app.task(name=REGRADE_TASK, bind=True, max_retries=settings.service.task_retries, shared=False)(
        regrade_step
    )


def grade_batch(task: Task, ids: list[int]) -> int:
    """Grade the submissions ``ids`` still queued with one ``grade_many``."""
    rt = runtime()
    try:
        outcome = grade_stored(rt.store, rt.graders, ids)
    except Exception as exc:  # database busy or down, a bug: retry, then dead-letter
        log.exception("grading %d submission(s) failed", len(ids))
        raise task.retry(exc=exc, countdown=_retry_in(task.request.retries)) from exc
    for delivery_id in outcome.deliveries:
        task.app.send_task(WEBHOOK_TASK, args=[delivery_id], queue=IO_QUEUE)
    if outcome.retry:  # the judge was unreachable for these: only they are tried again
        if task.request.retries >= task.max_retries:
            rt.store.queue.dead_letter(task.name, outcome.retry, "judge unavailable after retries")
        else:
            raise task.retry(args=[outcome.retry], countdown=_retry_in(task.request.retries))
    return outcome.graded


def regrade_step(task: Task, job_id: int) -> None:
    """One batch of a regrade job (``service.regrades``); the next batch is a task of its
    own, so new answers queued meanwhile are graded between a regrade's batches."""
    rt = runtime()
    try:
        done = regrades.step(rt.store, rt.graders, regrades.stale_after(rt.graders), job_id)
    except Exception as exc:
        log.exception("regrade %d failed", job_id)
        raise task.retry(exc=exc, countdown=_retry_in(task.request.retries)) from exc
    for delivery_id in done.deliveries:
        task.app.send_task(WEBHOOK_TASK, args=[delivery_id], queue=IO_QUEUE)
    if done.job is not None and not done.job.finished:
        wait = _retry_in(task.request.retries) if done.retry else 0
        task.app.send_task(REGRADE_TASK, args=[job_id], countdown=wait, queue=GRADE_QUEUE)


def deliver_webhook(task: Task, delivery_id: int) -> None:
    """One attempt; a failure schedules the next with backoff (the store keeps the count).

    The database being away is retried too, with backoff, rather than leaving the delivery
    to the sweeper (``GRADER_SWEEP_AFTER_S`` late); after ``GRADER_TASK_RETRIES`` the task
    fails and the sweeper is the last resort.
    """
    rt = runtime()
    settings = rt.settings
    try:
        wait = deliver(
            rt.store,
            delivery_id,
            client=rt.http,
            retries=settings.webhooks.retries,
            backoff_s=settings.service.retry_backoff_s,
        )
    except Exception as exc:
        if not database_unavailable(exc):
            raise
        log.warning("webhook %d: the database is unavailable (%s); retrying", delivery_id, exc)
        raise task.retry(exc=exc, countdown=_retry_in(task.request.retries)) from exc
    if wait is not None:
        task.app.send_task(
            WEBHOOK_TASK, args=[delivery_id], countdown=min(wait, _retry_in(99)), queue=IO_QUEUE
        )


def _retry_in(retries: int) -> float:
    # Capped below the visibility timeout: a longer countdown would be redelivered early.
    settings = runtime().settings
    cap = max(1.0, settings.service.visibility_timeout_s / 2)
    return backoff(retries + 1, settings.service.retry_backoff_s, cap)
