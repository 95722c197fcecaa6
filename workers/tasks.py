"""The tasks: thin — load ids, call the shared grading (or regrading) step, persist, acknowledge.

Plain functions, registered on an app by ``register`` (called by ``workers.app.create_app``)
under the names in ``workers.queues``, so importing this module builds no app. Webhooks need no
task: the transaction that stores the grades writes their deliveries to the outbox, and the
courier of each worker consuming ``io`` sends them from there (``workers.lifecycle``).

What a failure leads to depends on whether a later try can succeed:

- the database or the broker away (``outage``): retried with backoff, however long it lasts,
  and never dead-lettered. Were the broker away even for the retry's message, the answers
  stay ``queued``: the task comes back after ``GRADER_VISIBILITY_TIMEOUT_S``, or the sweeper
  sends them again;
- the judge unreachable: its answers retried ``GRADER_TASK_RETRIES`` times, then dead-lettered;
- anything else (an exam this worker does not serve, a bug): retried ``GRADER_TASK_RETRIES``
  times, then dead-lettered: a dead letter names the task's answers and the error that every
  try met, and its answers become ``failed`` with that error.
"""

from __future__ import annotations

import logging

from celery import Celery, Task

from grader.config import Settings
from grader.service import regrades
from grader.service.batches import grade_stored
from grader.service.outages import database_unavailable
from grader.service.webhooks import backoff
from workers.broker import broker_unavailable
from workers.queues import GRADE_QUEUE, GRADE_TASK, REGRADE_TASK
from workers.runtime import runtime

log = logging.getLogger(__name__)

# An outage is retried however long it lasts: this many tries is no limit in practice.
NO_LIMIT = 1_000_000
# Sending a retry's message: Celery's default gives up within a second; a restarting Redis
# is given about a minute (the running task waits, holding no other work).
PUBLISH_RETRY = {"max_retries": 20, "interval_start": 0.5, "interval_step": 0.5, "interval_max": 3}


def outage(error: BaseException) -> bool:
    """True for an error a later try may not meet: the database or the broker was away."""
    return database_unavailable(error) or broker_unavailable(error)


class DeadLetterOnFailure(Task):
    """After the last retry the batch is recorded as dead and its submissions as failed,
    unless what stopped it was an outage (then its answers stay queued, to come back)."""

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        ids = args[0] if args else kwargs.get("ids", [])
        if outage(exc):
            log.warning(
                "grading %d answer(s) stopped on an outage (%s: %s); they stay queued and come "
                "back by redelivery or the sweeper", len(ids), type(exc).__name__, exc,
            )  # fmt: skip
            return
        runtime().store.queue.dead_letter(self.name, ids, f"{type(exc).__name__}: {exc}")


def register(app: Celery, settings: Settings) -> None:
    app.task(
        name=GRADE_TASK,
        bind=True,
        base=DeadLetterOnFailure,
        max_retries=settings.service.task_retries,
        shared=False,
    )(grade_batch)
    app.task(name=REGRADE_TASK, bind=True, max_retries=settings.service.task_retries, shared=False)(
        regrade_step
    )


def grade_batch(task: Task, ids: list[int], outages: int = 0) -> int:
    """Grade the submissions ``ids`` still queued with one ``grade_many``. ``outages``: the
    retries so far that an outage caused (they count against no limit)."""
    rt = runtime()
    tries = task.request.retries - outages  # the retries that count against the limit
    try:
        outcome = grade_stored(rt.store, rt.graders, ids)
    except Exception as exc:
        if outage(exc):
            log.warning("grading %d answer(s): %s; retrying", len(ids), _short(exc))
            raise _retry(task, ids, outages + 1, _retry_in(outages), NO_LIMIT, exc) from exc
        log.exception("grading %d submission(s) failed", len(ids))
        limit = task.max_retries + outages
        raise _retry(task, ids, outages, _retry_in(tries), limit, exc) from exc
    if outcome.retry:  # the judge was unreachable for these: only they are tried again
        if tries >= task.max_retries:
            rt.store.queue.dead_letter(task.name, outcome.retry, "judge unavailable after retries")
        else:
            raise _retry(task, outcome.retry, outages, _retry_in(tries), task.max_retries + outages)
    return outcome.graded


def regrade_step(task: Task, job_id: int, outages: int = 0) -> None:
    """One batch of a regrade job (``service.regrades``); the next batch is a task of its
    own, so new answers queued meanwhile are graded between a regrade's batches. The grade
    versions it makes go out from the outbox (the couriers). An outage is retried however long
    it lasts; another error ``GRADER_TASK_RETRIES`` times, then the sweeper sends the job again
    (it resumes where it stopped)."""
    rt = runtime()
    tries = task.request.retries - outages
    try:
        done = regrades.step(rt.store, rt.graders, regrades.stale_after(rt.graders), job_id)
    except Exception as exc:
        if outage(exc):
            log.warning("regrade %d: %s; retrying", job_id, _short(exc))
            raise _retry(task, job_id, outages + 1, _retry_in(outages), NO_LIMIT, exc) from exc
        log.exception("regrade %d failed", job_id)
        limit = task.max_retries + outages
        raise _retry(task, job_id, outages, _retry_in(tries), limit, exc) from exc
    if done.job is not None and not done.job.finished:
        wait = _retry_in(tries) if done.retry else 0
        task.app.send_task(REGRADE_TASK, args=[job_id], countdown=wait, queue=GRADE_QUEUE)


def _retry(task: Task, work: list[int] | int, outages: int, countdown: float, limit: int,
           exc: Exception | None = None) -> Exception:  # fmt: skip
    """The task again with ``work`` (its answers, or its regrade job)."""
    return task.retry(
        args=[work],
        kwargs={"outages": outages},
        exc=exc,
        countdown=countdown,
        max_retries=limit,
        retry_policy=PUBLISH_RETRY,
    )


def _retry_in(retries: int) -> float:
    # Capped below the visibility timeout: a longer countdown would be redelivered early.
    settings = runtime().settings
    cap = max(1.0, settings.service.visibility_timeout_s / 2)
    return backoff(retries + 1, settings.service.retry_backoff_s, cap)


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"
