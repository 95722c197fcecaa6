"""The tasks: thin — load ids, call the shared grading step, persist, acknowledge."""

from __future__ import annotations

import logging

from celery import Task

from grader.grading import grade_stored
from grader.webhooks import backoff, deliver
from workers.app import app, settings
from workers.runtime import runtime

log = logging.getLogger(__name__)


class _DeadLetterOnFailure(Task):
    """After the last retry the batch is recorded as dead and its submissions as failed."""

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        ids = args[0] if args else kwargs.get("ids", [])
        runtime().store.dead_letter(self.name, ids, f"{type(exc).__name__}: {exc}")


def _retry_in(retries: int) -> float:
    # Capped below the visibility timeout: a longer countdown would be redelivered early.
    cap = max(1.0, settings.visibility_timeout_s / 2)
    return backoff(retries + 1, settings.retry_backoff_s, cap)


@app.task(bind=True, base=_DeadLetterOnFailure, max_retries=settings.task_retries)
def grade_batch(self, ids: list[int]) -> int:
    """Grade the submissions ``ids`` still queued with one ``grade_many``."""
    rt = runtime()
    try:
        outcome = grade_stored(rt.store, rt.graders, ids)
    except Exception as exc:  # database busy or down, a bug: retry, then dead-letter
        log.exception("grading %d submission(s) failed", len(ids))
        raise self.retry(exc=exc, countdown=_retry_in(self.request.retries)) from exc
    for delivery_id in outcome.deliveries:
        deliver_webhook.apply_async((delivery_id,), queue="io")
    if outcome.retry:  # the judge was unreachable for these: only they are tried again
        if self.request.retries >= self.max_retries:
            rt.store.dead_letter(self.name, outcome.retry, "judge unavailable after retries")
        else:
            raise self.retry(args=[outcome.retry], countdown=_retry_in(self.request.retries))
    return outcome.graded


@app.task(bind=True)
def deliver_webhook(self, delivery_id: int) -> None:
    """One attempt; a failure schedules the next with backoff (the store keeps the count)."""
    rt = runtime()
    wait = deliver(
        rt.store,
        delivery_id,
        retries=settings.webhook_retries,
        timeout_s=settings.webhook_timeout_s,
        backoff_s=settings.retry_backoff_s,
        client=rt.http,
    )
    if wait is not None:
        deliver_webhook.apply_async((delivery_id,), countdown=min(wait, _retry_in(99)), queue="io")
