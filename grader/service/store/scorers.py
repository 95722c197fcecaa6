"""Exam scorers: refit on the instructor pages from an exam's human scores, proposed, then
applied to the exam's stored grades.

A refit is kept as a row (the scorer file's text, its version, the before/after report) so
that the page that shows the report and the form that applies it read the same scorer, and
so that every worker sees the applied one on its next task. The exam's scorer is the row
applied last; applying an earlier row again goes back to it.

Applying re-scores the exam's grades in the same transaction that marks the row applied: a
reader never sees grades from one scorer beside a store that names another. A regrade
(``rescore``: the scorer as it is, more instructor scores in) replaces grades the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Connection, Engine

from grader.models import Grade
from grader.service.store.engine import insert_ignore
from grader.service.store.records import utcnow
from grader.service.store.review_rank import rerank_in
from grader.service.store.rows import newest_override
from grader.service.store.schema import exam_scorers, grades, review_queue
from grader.service.store.versions import settle


@dataclass(frozen=True)
class ExamScorer:
    id: int
    exam: str
    version: str
    text: str  # the scorer file, as ``grader.engine.scoring.scorer_model.to_json`` wrote it
    report: dict
    created_by: str
    created_at: datetime
    applied_at: datetime | None
    applied_by: str | None


@dataclass(frozen=True)
class Rescored:
    """One stored grade replaced: the submission, the grade's rubric version, the new grade."""

    submission_id: int  # the store's id
    grade: Grade


class Scorers:
    def __init__(self, engine: Engine):
        self.engine = engine

    def propose(
        self, exam: str, version: str, text: str, report: dict, instructor: str
    ) -> ExamScorer:
        """Keep a refit; the same scorer refit again (same version) updates its report."""
        values = {"scorer": text, "report": report, "created_by": instructor,
                  "created_at": utcnow()}  # fmt: skip
        with self.engine.begin() as conn:
            updated = conn.execute(
                exam_scorers.update()
                .where(exam_scorers.c.exam == exam, exam_scorers.c.version == version)
                .values(**values)
            ).rowcount
            if not updated:
                insert_ignore(conn, exam_scorers, [{"exam": exam, "version": version, **values}])
            row = conn.execute(
                exam_scorers.select().where(
                    exam_scorers.c.exam == exam, exam_scorers.c.version == version
                )
            ).one()
        return _scorer(row)

    def get(self, exam: str, scorer_id: int) -> ExamScorer | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                exam_scorers.select().where(
                    exam_scorers.c.id == scorer_id, exam_scorers.c.exam == exam
                )
            ).first()
        return _scorer(row) if row else None

    def proposals(self, exam: str, limit: int = 20) -> list[ExamScorer]:
        """The exam's refits, newest first (applied or not): the pages list them to reopen."""
        with self.engine.connect() as conn:
            found = conn.execute(
                exam_scorers.select()
                .where(exam_scorers.c.exam == exam)
                .order_by(exam_scorers.c.created_at.desc(), exam_scorers.c.id.desc())
                .limit(limit)
            ).all()
        return [_scorer(row) for row in found]

    def applied(self, exam: str) -> ExamScorer | None:
        """The exam's scorer: the one applied last, or None (the exam's file or the default)."""
        with self.engine.connect() as conn:
            row = conn.execute(
                exam_scorers.select()
                .where(exam_scorers.c.exam == exam, exam_scorers.c.applied_at.is_not(None))
                .order_by(exam_scorers.c.applied_at.desc(), exam_scorers.c.id.desc())
                .limit(1)
            ).first()
        return _scorer(row) if row else None

    def apply(
        self, scorer: ExamScorer, instructor: str, rescored: Sequence[Rescored], share: float
    ) -> list[int]:
        """Mark ``scorer`` the exam's, replace the grades it re-scored and rank their questions'
        queues again (``share``: the review budget), in one transaction.

        Each grade replaces the stored record of its submission and rubric version (the grade
        it was computed from). Reviews follow the new grade: one that needs review and has no
        row gets one, an open one gets the new reasons, or is closed when nothing is left to
        review; a review an instructor already closed stays closed, and an overridden grade
        gets none (the override stays beside it and wins). Each grade whose platform reads a
        new one is a grade version (cause ``refit``); returns their webhook deliveries.
        """
        now = utcnow()
        with self.engine.begin() as conn:
            _replace_all(conn, scorer.exam, rescored, f"{instructor} (scorer {scorer.version})",
                         now, share)  # fmt: skip
            conn.execute(
                exam_scorers.update()
                .where(exam_scorers.c.id == scorer.id)
                .values(applied_at=now, applied_by=instructor)
            )
            return settle(conn, [r.submission_id for r in rescored], "refit", instructor, now)

    def rescore(
        self, exam: str, rescored: Sequence[Rescored], instructor: str, share: float
    ) -> list[int]:
        """Replace re-scored grades as ``apply`` does, the exam's scorer unchanged (a regrade
        after new instructor scores), and rank their questions' queues again, in one
        transaction: no reader sees a re-scored grade unranked. Grade versions as ``apply``
        makes them (cause ``regrade``); returns their webhook deliveries."""
        now = utcnow()
        with self.engine.begin() as conn:
            _replace_all(conn, exam, rescored, f"{instructor} (regrade)", now, share)
            return settle(conn, [r.submission_id for r in rescored], "regrade", instructor, now)


def _replace_all(
    conn: Connection,
    exam: str,
    rescored: Sequence[Rescored],
    resolver: str,
    now: datetime,
    share: float,
) -> None:
    """Every re-scored grade in place of the one it came from, then their questions ranked."""
    for item in rescored:
        _replace(conn, item, resolver, now)
    rerank_in(conn, exam, {r.grade.question_id for r in rescored}, share)


def _replace(conn: Connection, item: Rescored, resolver: str, now: datetime) -> None:
    grade = item.grade
    version = grade.provenance.rubric_version or ""
    conn.execute(
        grades.update()
        .where(grades.c.submission_id == item.submission_id, grades.c.rubric_version == version)
        .values(
            status=grade.status.value,
            score=grade.score,
            needs_review=grade.needs_review,
            record=grade.model_dump(mode="json"),
        )
    )
    reasons = [r.model_dump(mode="json") for r in grade.review_reasons]
    mine = (review_queue.c.submission_id == item.submission_id) & (
        review_queue.c.rubric_version == version
    )
    open_ = mine & review_queue.c.resolved_at.is_(None)
    if grade.needs_review:
        if newest_override(conn, item.submission_id) is not None:
            return  # the instructor settled it: their score is the one the platform reads
        conn.execute(review_queue.update().where(open_).values(reasons=reasons))
        insert_ignore(
            conn,
            review_queue,
            [{"submission_id": item.submission_id, "rubric_version": version,
              "reasons": reasons, "created_at": now}],
        )  # fmt: skip
    else:
        conn.execute(
            review_queue.update().where(open_).values(resolved_at=now, resolved_by=resolver[:100])
        )


def _scorer(row) -> ExamScorer:
    return ExamScorer(
        id=row.id,
        exam=row.exam,
        version=row.version,
        text=row.scorer,
        report=row.report,
        created_by=row.created_by,
        created_at=row.created_at,
        applied_at=row.applied_at,
        applied_by=row.applied_by,
    )
