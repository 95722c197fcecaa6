"""The review queue over an exam's stored grades: one ranking per question, whatever the batch.

Answers of one exam arrive over hours in small batches, and ``grade_many`` ranks only the
batch it graded; the budget (``ReviewSettings.share`` of a question's answers, plus hard
reasons) is over all of them. So after each batch is stored, the question's stored grades are
ranked again (``engine.review.queue.rank_question``): a grade that enters the top gets an open
review, one that falls out has its open review closed by ``RANKED_OUT`` (and reopened should
it rise again); reviews an instructor resolved stay resolved.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from grader.engine.review.queue import rank_question
from grader.models import Grade
from grader.service.store.engine import insert_ignore
from grader.service.store.records import utcnow
from grader.service.store.rows import newest_grade_id, newest_override
from grader.service.store.schema import grades, review_queue, submissions

RANKED_OUT = "(ranking)"  # resolved_by of a review closed because others rank above it


class ReviewRanking:
    def __init__(self, engine: Engine):
        self.engine = engine

    def rerank(self, exam: str, question_ids: Iterable[str], share: float) -> int:
        """Rank each question's stored grades again; returns how many grades changed."""
        with self.engine.begin() as conn:
            return rerank_in(conn, exam, question_ids, share)


def rerank_in(conn: Connection, exam: str, question_ids: Iterable[str], share: float) -> int:
    """``ReviewRanking.rerank`` inside the caller's transaction (the queue ranks a batch's
    questions in the one that stores its grades, so no reader sees a grade unranked)."""
    return sum(_rerank_question(conn, exam, qid, share) for qid in question_ids)


def _rerank_question(conn: Connection, exam: str, question_id: str, share: float) -> int:
    found = conn.execute(
        sa.select(grades.c.id, grades.c.submission_id, grades.c.rubric_version, grades.c.record)
        .select_from(submissions.join(grades, grades.c.id == newest_grade_id()))
        .where(submissions.c.exam == exam, submissions.c.question_id == question_id)
        .order_by(submissions.c.id)
    ).all()
    before = [Grade.model_validate(row.record) for row in found]
    now, changed = utcnow(), 0
    for row, old, new in zip(found, before, rank_question(before, share), strict=True):
        if new == old:
            continue
        changed += 1
        conn.execute(
            grades.update()
            .where(grades.c.id == row.id)
            .values(needs_review=new.needs_review, record=new.model_dump(mode="json"))
        )
        _sync_review(conn, row.submission_id, row.rubric_version, new, now)
    return changed


def _sync_review(conn: Connection, submission_id: int, version: str, grade: Grade, now) -> None:
    """The grade's review row as its new place in the ranking says; an overridden grade is
    never reopened (the instructor settled it: their score is the one the platform reads)."""
    mine = (review_queue.c.submission_id == submission_id) & (
        review_queue.c.rubric_version == version
    )
    if not grade.needs_review:
        conn.execute(
            review_queue.update()
            .where(mine, review_queue.c.resolved_at.is_(None))
            .values(resolved_at=now, resolved_by=RANKED_OUT)
        )
        return
    if newest_override(conn, submission_id) is not None:
        return
    reasons = [r.model_dump(mode="json") for r in grade.review_reasons]
    open_ = mine & (
        review_queue.c.resolved_at.is_(None) | (review_queue.c.resolved_by == RANKED_OUT)
    )
    conn.execute(
        review_queue.update()
        .where(open_)
        .values(reasons=reasons, resolved_at=None, resolved_by=None)
    )
    insert_ignore(
        conn,
        review_queue,
        [{"submission_id": submission_id, "rubric_version": version, "reasons": reasons,
          "created_at": now}],
    )  # fmt: skip
