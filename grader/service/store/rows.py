"""Reading rows into the store's records, and the newest-grade query they share.

A re-grade adds a grade row, and an instructor's override adds an override row: readers want
the newest of each. The newest grade is one correlated subquery (``newest_grade_id``) used by
every read that returns a grade.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from grader.models import Grade, SubmissionStatus
from grader.service.store.records import (
    SCORED_REASON,
    Instructor,
    Override,
    Platform,
    StoredSubmission,
    overridden,
)
from grader.service.store.schema import (
    grade_overrides,
    grade_versions,
    grades,
    human_scores,
    instructor_exams,
    instructors,
    platform_exams,
    submissions,
)


def newest_grade_id() -> sa.ScalarSelect:
    """The id of the submission's newest grade row, correlated to ``submissions``."""
    other = grades.alias("newer")
    return (
        sa.select(sa.func.max(other.c.id))
        .where(other.c.submission_id == submissions.c.id)
        .correlate(submissions)
        .scalar_subquery()
    )


def with_newest_grade(*where: sa.ColumnElement[bool]) -> sa.Select:
    """Submissions matching ``where`` with their newest grade record (or None), in id order:
    the judge's own grade, as the instructor pages show it."""
    return (
        sa.select(submissions, grades.c.record)
        .select_from(submissions.outerjoin(grades, grades.c.id == newest_grade_id()))
        .where(*where)
        .order_by(submissions.c.id)
    )


def newest_overrides(
    conn: Connection, submission_ids: sa.Select | Iterable[int]
) -> dict[int, Override]:
    """The newest override per submission among ``submission_ids`` (ids, or a select of ids)."""
    rows = conn.execute(
        grade_overrides.select()
        .where(grade_overrides.c.submission_id.in_(submission_ids))
        .order_by(grade_overrides.c.id)
    )
    return {row.submission_id: _override(row) for row in rows}


def newest_override(conn: Connection, submission_id: int) -> Override | None:
    return newest_overrides(conn, [submission_id]).get(submission_id)


def instructor_grades(
    conn: Connection, submission_ids: sa.Select | Iterable[int]
) -> dict[int, Override]:
    """The instructors' grade per submission among ``submission_ids``: the newest of its
    overrides and of the scores entered on the pages (an instructor's score is the grade)."""
    if not isinstance(submission_ids, sa.Select):
        submission_ids = list(submission_ids)
    found = newest_overrides(conn, submission_ids)
    scored = conn.execute(
        sa.select(human_scores, instructors.c.name)
        .join(instructors, instructors.c.id == human_scores.c.instructor_id)
        .where(human_scores.c.submission_id.in_(submission_ids))
        .order_by(human_scores.c.created_at, human_scores.c.id)
    )
    for row in scored:
        earlier = found.get(row.submission_id)
        if earlier is None or earlier.created_at < row.created_at:
            found[row.submission_id] = Override(
                row.score, SCORED_REASON, row.name, row.created_at, row.criteria or None
            )
    return found


def newest_version_id() -> sa.ScalarSelect:
    """The id of the submission's newest grade version, correlated to ``submissions``."""
    other = grade_versions.alias("newer_version")
    return (
        sa.select(sa.func.max(other.c.id))
        .where(other.c.submission_id == submissions.c.id)
        .correlate(submissions)
        .scalar_subquery()
    )


def with_current_grade(*where: sa.ColumnElement[bool]) -> sa.Select:
    """Submissions matching ``where`` with the grade their platform reads: the record and
    number of their newest grade version (None before the first grade), in id order."""
    return (
        sa.select(submissions, grade_versions.c.record, grade_versions.c.version)
        .select_from(
            submissions.outerjoin(grade_versions, grade_versions.c.id == newest_version_id())
        )
        .where(*where)
        .order_by(submissions.c.id)
    )


def current(row) -> StoredSubmission:
    """A ``with_current_grade`` row: the submission with its current grade version, the grade
    the webhook of that version carried."""
    found = stored(row)
    if row.record is None:
        return found
    return replace(found, grade=Grade.model_validate(row.record), version=row.version)


def stored(row, record: dict | None = None, override: Override | None = None) -> StoredSubmission:
    """The submission with its grade; an instructor's override, when given, wins."""
    return StoredSubmission(
        id=row.id,
        platform_id=row.platform_id,
        external_id=row.external_id,
        exam=row.exam,
        question_id=row.question_id,
        answer=row.answer,
        student=row.student,
        status=SubmissionStatus(row.status),
        created_at=row.created_at,
        graded_at=row.graded_at,
        error=row.error,
        grade=platform_grade(record, row.external_id, override),
    )


def platform_grade(
    record: dict | None, external_id: str, override: Override | None
) -> Grade | None:
    """A stored grade record as its platform sees it: its own submission id, the override."""
    if record is None:
        return None
    return overridden(Grade.model_validate({**record, "submission_id": external_id}), override)


def platform(conn: Connection, row) -> Platform:
    exams = conn.execute(
        sa.select(platform_exams.c.exam).where(platform_exams.c.platform_id == row.id)
    ).scalars()
    return Platform(
        row.id,
        row.name,
        row.key_hash,
        row.webhook_url,
        row.webhook_secret,
        frozenset(exams),
        row.removed_at,
    )


def instructor(conn: Connection, row) -> Instructor:
    exams = conn.execute(
        sa.select(instructor_exams.c.exam).where(instructor_exams.c.instructor_id == row.id)
    ).scalars()
    return Instructor(
        row.id, row.name, row.key_hash, frozenset(exams), row.session_generation, row.removed_at
    )


def _override(row) -> Override:
    return Override(row.score, row.reason, row.instructor, row.created_at)
