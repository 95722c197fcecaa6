"""What instructors read and write on the pages: answers with the judge's newest grade, their
own scores, overrides (a history; the newest wins) and the review queue. A score or an
override is the grade its platform reads: each that changes it is a grade version
(``versions.settle``)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from grader.service.store import rows
from grader.service.store.engine import insert_ignore
from grader.service.store.records import AnswerCounts, AnswerRow, HumanEntry, Saved, utcnow
from grader.service.store.schema import (
    grade_overrides,
    grades,
    human_scores,
    instructors,
    review_queue,
    submissions,
)
from grader.service.store.versions import settle


class Reviews:
    def __init__(self, engine: Engine):
        self.engine = engine

    def answers(
        self,
        exam: str,
        question_id: str | None = None,
        *,
        open_only: bool = False,
        scored_only: bool = False,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[AnswerRow]:
        """Submissions to an exam (all platforms) with the judge's newest grade, the newest
        human score, the newest override and the open review, in submission order: those with
        an open review or a human score only when asked, ``limit`` of them from ``offset``."""
        where = [submissions.c.exam == exam]
        if question_id is not None:
            where.append(submissions.c.question_id == question_id)
        if open_only:
            where.append(_has_open_review())
        if scored_only:
            where.append(_has_human_score())
        return self._answer_rows(where, offset, limit)

    def answer(self, submission_id: int) -> AnswerRow | None:
        """One submission by the store's own id (the instructor pages' handle)."""
        found = self._answer_rows([submissions.c.id == submission_id])
        return found[0] if found else None

    def counts(self, exam: str, question_id: str | None = None) -> dict[str, AnswerCounts]:
        """Per question of the exam that has answers: how many, graded, scored by an
        instructor, with an open review; counted by the database, no answer read."""

        def how_many(condition: sa.ColumnElement[bool]) -> sa.ColumnElement:
            return sa.func.sum(sa.case((condition, 1), else_=0))

        where = [submissions.c.exam == exam]
        if question_id is not None:
            where.append(submissions.c.question_id == question_id)
        graded = sa.exists().where(grades.c.submission_id == submissions.c.id)
        query = (
            sa.select(
                submissions.c.question_id,
                sa.func.count(submissions.c.id),
                how_many(graded),
                how_many(_has_human_score()),
                how_many(_has_open_review()),
            )
            .where(*where)
            .group_by(submissions.c.question_id)
        )
        with self.engine.connect() as conn:
            found = conn.execute(query).all()
        return {q: AnswerCounts(*(int(n or 0) for n in counts)) for q, *counts in found}

    def position(self, submission_id: int, exam: str, question_id: str) -> int | None:
        """How many of the question's answers come before this one (for its page); None when
        it is not an answer to that question."""
        same = [submissions.c.exam == exam, submissions.c.question_id == question_id]
        with self.engine.connect() as conn:
            if (
                conn.execute(
                    sa.select(submissions.c.id).where(*same, submissions.c.id == submission_id)
                ).first()
                is None
            ):
                return None
            return conn.execute(
                sa.select(sa.func.count()).where(*same, submissions.c.id < submission_id)
            ).scalar_one()

    def _answer_rows(
        self, where: list, offset: int = 0, limit: int | None = None
    ) -> list[AnswerRow]:
        page = rows.with_newest_grade(*where).offset(offset).limit(limit)
        ids = sa.select(submissions.c.id).where(*where)
        if offset or limit is not None:
            ids = ids.order_by(submissions.c.id).offset(offset).limit(limit)
        with self.engine.connect() as conn:
            found = conn.execute(page).all()
            overrides = rows.newest_overrides(conn, ids)
            humans: dict[int, HumanEntry] = {}
            for h in conn.execute(
                sa.select(human_scores, instructors.c.name)
                .join(instructors, instructors.c.id == human_scores.c.instructor_id)
                .where(human_scores.c.submission_id.in_(ids))
                .order_by(human_scores.c.created_at, human_scores.c.id)
            ):
                humans[h.submission_id] = HumanEntry(h.name, h.score, h.criteria, h.created_at)
            reviews = dict(
                conn.execute(
                    sa.select(review_queue.c.submission_id, review_queue.c.reasons)
                    .where(review_queue.c.submission_id.in_(ids), review_queue.c.resolved_at.is_(None))
                    .order_by(review_queue.c.id)
                ).all()
            )  # fmt: skip
        return [
            AnswerRow(
                # the judge's own grade: the override is beside it, not applied
                rows.stored(row, row.record), humans.get(row.id), overrides.get(row.id),
                reviews.get(row.id),
            )
            for row in found
        ]  # fmt: skip

    def set_human_score(
        self,
        submission_id: int,
        instructor_id: int,
        score: float,
        criteria: dict[str, float] | None,
    ) -> Saved:
        """The instructor's score of an answer; entering it again replaces it (one per pair).
        The score is the grade its platform reads (the newest instructor's grade wins): a new
        grade version when it changes it, with its webhook delivery (``Saved.deliveries``)."""
        now = utcnow()
        values = {"score": score, "criteria": criteria, "created_at": now}
        with self.engine.begin() as conn:
            updated = conn.execute(
                human_scores.update()
                .where(
                    human_scores.c.submission_id == submission_id,
                    human_scores.c.instructor_id == instructor_id,
                )
                .values(**values)
            ).rowcount
            if not updated:
                insert_ignore(
                    conn,
                    human_scores,
                    [{"submission_id": submission_id, "instructor_id": instructor_id, **values}],
                )
            name = conn.execute(
                sa.select(instructors.c.name).where(instructors.c.id == instructor_id)
            ).scalar_one()
            return Saved(True, settle(conn, [submission_id], "score", name, now))

    def add_override(self, submission_id: int, score: float, reason: str, instructor: str) -> Saved:
        """Override the grade and close its review; the same override twice is stored once.

        Overrides are kept as a history (who, when, why); the newest instructor's grade wins.
        """
        now = utcnow()
        with self.engine.begin() as conn:
            newest = rows.newest_override(conn, submission_id)
            if newest and (newest.score, newest.reason, newest.instructor) == (
                score, reason, instructor,
            ):  # fmt: skip
                return Saved(False, [])
            conn.execute(
                grade_overrides.insert().values(
                    submission_id=submission_id,
                    score=score,
                    reason=reason,
                    instructor=instructor,
                    created_at=now,
                )
            )
            _resolve(conn, submission_id, instructor, now)
            return Saved(True, settle(conn, [submission_id], "override", instructor, now))

    def accept_judge(self, submission_id: int, instructor: str) -> bool:
        """Mark the judge's grade reviewed as it stands; False when nothing was open."""
        with self.engine.begin() as conn:
            return _resolve(conn, submission_id, instructor, utcnow()) > 0


def _resolve(conn: Connection, submission_id: int, instructor: str, now) -> int:
    return conn.execute(
        review_queue.update()
        .where(review_queue.c.submission_id == submission_id, review_queue.c.resolved_at.is_(None))
        .values(resolved_at=now, resolved_by=instructor)
    ).rowcount


def _has_open_review() -> sa.Exists:
    return sa.exists().where(
        review_queue.c.submission_id == submissions.c.id, review_queue.c.resolved_at.is_(None)
    )


def _has_human_score() -> sa.Exists:
    return sa.exists().where(human_scores.c.submission_id == submissions.c.id)
