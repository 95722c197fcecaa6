"""Apply a rubric change to everyone: a question's stored answers graded again against its
rubric as it stands, by the grading pipeline (judge, signals, scorer) like a new answer, in
the background, a batch at a time, wherever grading runs (``store.regrades``).

An instructor's own score stays the grade their platform reads (it is never re-scored); the
judge's grade beneath it is regraded, so the pages can compare both with the instructor's.
Each grade a platform reads that moved is a new version with its webhook (cause ``rubric``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from grader.engine.reading.rubrics import rubric_for
from grader.errors import GraderError
from grader.service.batches import grade_items
from grader.service.exams import Exam, Graders
from grader.service.rubric_versions import refresh
from grader.service.store import Store
from grader.service.store.regrades import RegradeJob


def start(store: Store, exam: Exam, question_id: str, by: str) -> RegradeJob:
    """A regrade of the question's graded answers against its newest rubric version."""
    question = exam.bank.get(question_id)
    if question is None or question.type.objective:
        raise GraderError(f"{question_id} has no rubric to regrade against")
    refresh(exam, store)
    version = rubric_for(question, exam.rubrics).version
    return store.regrades.start(exam.name, question_id, version, by)


@dataclass
class Step:
    """What one step did: the job as it stands after (the webhooks of the grade versions it
    made go out from the outbox)."""

    job: RegradeJob | None = None
    retry: bool = False  # the judge was unreachable: the batch was given back


def step(
    store: Store,
    graders: Graders,
    stale_after: timedelta,
    job_id: int | None = None,
    before_batch: Callable[[list[int]], object] = lambda ids: None,
) -> Step:
    """Claim a regrade (``job_id``, or the oldest waiting) and grade its next batch; nothing
    when none waits. A job whose question's rubric changed again since it started fails (its
    grades would be of neither version): the page offers a new one."""
    job = store.regrades.claim(stale_after, job_id)
    if job is None:
        return Step()
    exam = graders.exams.get(job.exam)
    question = exam.bank.get(job.question_id) if exam is not None else None
    if exam is None or question is None:
        store.regrades.fail(job, f"{job.exam}/{job.question_id} is not served here")
        return Step(store.regrades.get(job.id))
    refresh(exam, store)
    if rubric_for(question, exam.rubrics).version != job.rubric_version:
        store.regrades.fail(job, "the rubric changed again since this regrade started")
        return Step(store.regrades.get(job.id))
    batch = store.regrades.batch(job, graders.settings.service.batch_size)
    before_batch([s.id for s in batch])
    try:
        results, retry = grade_items(store, graders, batch)
        if retry:  # the judge is unreachable: the whole batch again, later
            store.regrades.release(job)
            return Step(store.regrades.get(job.id), retry=True)
        share = graders.settings.review.share
        store.regrades.record(job, [s.id for s in batch], results, share)
    except Exception:  # the batch is given back at once, not when its claim goes stale
        store.regrades.release(job)
        raise
    return Step(store.regrades.get(job.id))


def stale_after(graders: Graders) -> timedelta:
    """A claim held this long is its process's that died: the batch may be taken again."""
    return timedelta(seconds=graders.settings.service.visibility_timeout_s)
