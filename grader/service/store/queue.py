"""The grading queue in the database: claiming submissions whose task may be lost, reading a
task's submissions, their cohort and the instructors' scored answers beside them, and settling
them (grades recorded, or dead-lettered).

Every write a redelivered task can repeat is idempotent: a grade is unique per (submission,
rubric version) and inserted-or-ignored, and the submission is marked graded in the same
transaction, so grading twice stores one grade.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from grader.models import DeliveryStatus, Grade, GradedAnswer, SubmissionStatus
from grader.service.store import rows
from grader.service.store.engine import insert_ignore
from grader.service.store.records import StoredSubmission, utcnow
from grader.service.store.review_rank import rerank_in
from grader.service.store.schema import (
    dead_letters,
    grades,
    human_scores,
    review_queue,
    submissions,
    webhook_deliveries,
)
from grader.service.store.versions import settle

_QUEUED = SubmissionStatus.QUEUED.value
_CLAIM_CHUNK = 500


class Queue:
    def __init__(self, engine: Engine):
        self.engine = engine

    def claim_stale(self, older_than: timedelta, limit: int = 10_000) -> list[StoredSubmission]:
        """Queued submissions whose task may be lost; claimed so one sweeper re-enqueues them.

        The claim (moving ``enqueued_at`` to now) is conditional, so two sweepers racing over
        the same rows split them instead of both enqueuing every one.
        """
        now = utcnow()
        cutoff = now - older_than
        with self.engine.begin() as conn:
            candidates = conn.execute(
                sa.select(submissions.c.id)
                .where(submissions.c.status == _QUEUED, submissions.c.enqueued_at < cutoff)
                .order_by(submissions.c.id)
                .limit(limit)
            ).scalars().all()  # fmt: skip
            claimed: list[sa.Row[Any]] = []
            for start in range(0, len(candidates), _CLAIM_CHUNK):
                claimed += conn.execute(
                    submissions.update()
                    .where(
                        submissions.c.id.in_(candidates[start : start + _CLAIM_CHUNK]),
                        submissions.c.status == _QUEUED,
                        submissions.c.enqueued_at < cutoff,
                    )
                    .values(enqueued_at=now)
                    .returning(*submissions.c)
                ).all()
        return [rows.stored(row) for row in sorted(claimed, key=lambda r: r.id)]

    def queued(self, ids: Sequence[int]) -> list[StoredSubmission]:
        """Those of ``ids`` still waiting for a grade (a redelivered task skips the rest)."""
        with self.engine.connect() as conn:
            found = conn.execute(
                submissions.select()
                .where(submissions.c.id.in_(list(ids)), submissions.c.status == _QUEUED)
                .order_by(submissions.c.id)
            ).all()
        return [rows.stored(row) for row in found]

    def cohort(
        self, platform_id: int, exam: str, question_ids: Sequence[str]
    ) -> list[StoredSubmission]:
        """A platform's answers to some questions of an exam, graded or not: the cohort that
        off-topic, near-duplicate and group signals compare a new answer with."""
        with self.engine.connect() as conn:
            found = conn.execute(
                submissions.select()
                .where(
                    submissions.c.platform_id == platform_id,
                    submissions.c.exam == exam,
                    submissions.c.question_id.in_(list(question_ids)),
                )
                .order_by(submissions.c.id)
            ).all()
        return [rows.stored(row) for row in found]

    def graded(
        self, platform_id: int, exam: str, question_ids: Sequence[str]
    ) -> list[GradedAnswer]:
        """A platform's answers to some questions of an exam that an instructor scored, with
        the newest score of each (the neighbours the scorer leans on). Never another
        platform's: their students' answers must not shape, or be named in, these grades."""
        newest = (  # as the pages show it: the score entered last, whoever entered it
            sa.select(human_scores.c.id)
            .where(human_scores.c.submission_id == submissions.c.id)
            .order_by(human_scores.c.created_at.desc(), human_scores.c.id.desc())
            .limit(1)
            .correlate(submissions)
            .scalar_subquery()
        )
        with self.engine.connect() as conn:
            found = conn.execute(
                sa.select(
                    submissions.c.id, submissions.c.question_id, submissions.c.answer,
                    human_scores.c.score,
                )
                .join(human_scores, human_scores.c.id == newest)
                .where(
                    submissions.c.platform_id == platform_id,
                    submissions.c.exam == exam,
                    submissions.c.question_id.in_(list(question_ids)),
                )
                .order_by(submissions.c.id)
            ).all()  # fmt: skip
        return [
            GradedAnswer(id=str(r.id), question_id=r.question_id, answer=r.answer, score=r.score)
            for r in found
        ]

    def record(
        self,
        results: Sequence[tuple[StoredSubmission, Grade]],
        review_share: float | None = None,
        cause: str = "engine",
        actor: str | None = None,
    ) -> list[int]:
        """Store grades and mark their submissions graded, in one transaction; idempotent.
        With ``review_share`` the transaction also ranks each touched question's stored grades
        again (``review_rank``): the review budget is over all of a question's answers, and no
        reader sees a stored grade before its place in the queue.

        A grade that changes what the platform reads is a new version (``versions.settle``,
        ``cause``: what graded it), announced by a webhook delivery in the same transaction.
        Returns the ids of pending webhook deliveries for these submissions, so the caller
        can send them once the grades are safely committed.
        """
        if not results:
            return []
        now = utcnow()
        ids = [s.id for s, _ in results]
        with self.engine.begin() as conn:
            insert_ignore(conn, grades, [_grade_row(s, g, now) for s, g in results])
            insert_ignore(
                conn,
                review_queue,
                [
                    {
                        "submission_id": s.id,
                        "rubric_version": _rubric_version(g),
                        "reasons": [r.model_dump(mode="json") for r in g.review_reasons],
                        "created_at": now,
                    }
                    for s, g in results
                    if g.needs_review
                ],
            )
            conn.execute(
                submissions.update()
                .where(
                    submissions.c.id.in_(ids),
                    submissions.c.status != SubmissionStatus.GRADED.value,
                )
                .values(status=SubmissionStatus.GRADED.value, graded_at=now, error=None)
            )
            if review_share is not None:
                for exam in {stored.exam for stored, _ in results}:
                    touched = {stored.question_id for stored, _ in results if stored.exam == exam}
                    rerank_in(conn, exam, sorted(touched), review_share)
            settle(conn, ids, cause, actor, now)
            return list(
                conn.execute(
                    sa.select(webhook_deliveries.c.id).where(
                        webhook_deliveries.c.submission_id.in_(ids),
                        webhook_deliveries.c.status == DeliveryStatus.PENDING.value,
                    )
                ).scalars()
            )

    def dead_letter(self, task: str, submission_ids: Sequence[int], error: str) -> None:
        """Record work that exhausted its retries; its submissions become ``failed``."""
        with self.engine.begin() as conn:
            conn.execute(
                dead_letters.insert().values(
                    task=task,
                    submission_ids=list(submission_ids),
                    error=error,
                    created_at=utcnow(),
                )
            )
            conn.execute(
                submissions.update()
                .where(submissions.c.id.in_(list(submission_ids)), submissions.c.status == _QUEUED)
                .values(status=SubmissionStatus.FAILED.value, error=error)
            )


def _grade_row(s: StoredSubmission, g: Grade, now) -> dict:
    return {
        "submission_id": s.id,
        "rubric_version": _rubric_version(g),
        "status": g.status.value,
        "score": g.score,
        "needs_review": g.needs_review,
        "judge_latency_s": g.provenance.latency_s,
        "record": g.model_dump(mode="json"),
        "created_at": now,
    }


def _rubric_version(grade: Grade) -> str:
    return grade.provenance.rubric_version or ""
