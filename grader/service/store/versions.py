"""Every change to a grade is a version: what changed it (the engine, an instructor's override
or score, a regrade, a refit, a rubric edit), who, when, from what to what, and the grade as
its platform then saw it.

Each transaction that can change what a platform reads (a grade stored, re-scored or
regraded, an override, a score entered) ends with ``settle``: it computes the grade as the
platform sees it (the newest grade, the instructors' grade winning), compares it with the
newest version, and when it differs writes the next version and a webhook delivery for it,
``grade.completed`` for the first and ``grade.updated`` after — in the same transaction, so a
change is never unannounced and never announced twice. What differs is what a platform
records: the status, score, maximum, method and points per criterion; the review queue's
bookkeeping (re-ranked flags) is not a change of the grade.

The version's id is the platform's change cursor (``changes``). On PostgreSQL ids are taken
at insert and transactions commit in any order, so ``settle`` first takes a lock per platform
it writes for: one platform's versions commit in id order, and a platform reading ``after=N``
never skips a version committed later with a smaller id. SQLite has one writer.

That lock is a transaction-level advisory lock, not a lock on the platform's row: the intake
locks that row (``FOR NO KEY UPDATE``) to count a platform's queue, and a grading transaction
holding it ``FOR UPDATE`` until its commit would make posts wait for the workers again.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from grader.models import DeliveryStatus, Grade
from grader.service.store import rows
from grader.service.store.records import GRADE_EVENT, UPDATE_EVENT, GradeChange
from grader.service.store.schema import (
    grade_versions,
    grades,
    platforms,
    submissions,
    webhook_deliveries,
)

CAUSES = ("engine", "override", "score", "regrade", "refit", "rubric")
VERSIONS_LOCK = 0x67726476  # the advisory lock's first key ("grdv"): a platform's versions
_IN_CHUNK = 500
MAX_PAGE = 1000


def material(grade: dict) -> dict:
    """What a platform records of a grade: a new version only when this differs."""
    return {
        "status": grade.get("status"),
        "score": grade.get("score"),
        "max_score": grade.get("max_score"),
        "method": grade.get("method"),
        "criteria": [(c.get("id"), c.get("points")) for c in grade.get("criteria") or []],
    }


def settle(
    conn: Connection,
    submission_ids: Iterable[int],
    cause: str,
    actor: str | None,
    now: datetime,
) -> list[int]:
    """Write a version (and its webhook delivery) for each of ``submission_ids`` whose grade,
    as its platform sees it now, differs from its newest version; returns the new delivery
    ids. Call it last in the transaction that changed the grades."""
    if cause not in CAUSES:
        raise ValueError(f"unknown cause of a grade change: {cause!r}")
    ids = sorted(set(submission_ids))
    if not ids:
        return []
    deliveries: list[int] = []
    for start in range(0, len(ids), _IN_CHUNK):
        chunk = ids[start : start + _IN_CHUNK]
        deliveries += _settle_chunk(conn, chunk, cause, actor, now)
    return deliveries


def _settle_chunk(
    conn: Connection, ids: list[int], cause: str, actor: str | None, now: datetime
) -> list[int]:
    found = conn.execute(
        sa.select(
            submissions.c.id, submissions.c.platform_id, submissions.c.external_id,
            grades.c.record, platforms.c.webhook_url,
        )
        .select_from(
            submissions.join(grades, grades.c.id == rows.newest_grade_id()).join(
                platforms, platforms.c.id == submissions.c.platform_id
            )
        )
        .where(submissions.c.id.in_(ids))
        .order_by(submissions.c.id)
    ).all()  # fmt: skip
    if not found:
        return []
    _lock_platforms(conn, {row.platform_id for row in found})
    previous = _newest_versions(conn, [row.id for row in found])
    instructors = rows.instructor_grades(conn, [row.id for row in found])
    deliveries = []
    for row in found:
        grade = rows.platform_grade(row.record, row.external_id, instructors.get(row.id))
        assert grade is not None
        record = grade.model_dump(mode="json")
        before = previous.get(row.id)
        if before is not None and material(before.record) == material(record):
            continue
        version = before.version + 1 if before is not None else 1
        version_id = conn.execute(
            grade_versions.insert().values(
                submission_id=row.id,
                platform_id=row.platform_id,
                version=version,
                cause=cause,
                actor=actor[:100] if actor else None,
                rubric_version=grade.provenance.rubric_version,
                previous_status=before.status if before is not None else None,
                previous_score=before.score if before is not None else None,
                status=grade.status.value,
                score=grade.score,
                record=record,
                created_at=now,
            )
        ).inserted_primary_key[0]  # type: ignore[index]  # one row inserted: never None
        if row.webhook_url:
            deliveries.append(_announce(conn, row, version, version_id, now))
    return deliveries


def _announce(conn: Connection, row, version: int, version_id: int, now: datetime) -> int:
    return conn.execute(
        webhook_deliveries.insert().values(
            platform_id=row.platform_id,
            submission_id=row.id,
            event=GRADE_EVENT if version == 1 else UPDATE_EVENT,
            status=DeliveryStatus.PENDING.value,
            attempts=0,
            next_attempt_at=now,
            created_at=now,
            version_id=version_id,
        )
    ).inserted_primary_key[0]  # type: ignore[index]


def _lock_platforms(conn: Connection, platform_ids: set[int]) -> None:
    """PostgreSQL: one platform's versions are written one transaction at a time, in a fixed
    order of platforms (no deadlock between two transactions locking two platforms); the
    locks end with the transaction."""
    if conn.dialect.name != "postgresql":
        return
    for platform_id in sorted(platform_ids):
        keys = (sa.cast(key, sa.Integer) for key in (VERSIONS_LOCK, platform_id))
        conn.execute(sa.select(sa.func.pg_advisory_xact_lock(*keys))).all()


def _newest_versions(conn: Connection, ids: list[int]) -> dict[int, sa.Row]:
    newest = (
        sa.select(sa.func.max(grade_versions.c.id))
        .where(grade_versions.c.submission_id.in_(ids))
        .group_by(grade_versions.c.submission_id)
    )
    return {
        row.submission_id: row
        for row in conn.execute(grade_versions.select().where(grade_versions.c.id.in_(newest)))
    }


class Versions:
    """What platforms read of the versions: the changes since a cursor, and one history."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def changes(
        self, platform_id: int, exam: str, after: int = 0, limit: int = 100
    ) -> list[GradeChange]:
        """The platform's grade versions of ``exam`` with a cursor past ``after``, oldest
        first, at most ``limit`` (up to one past ``MAX_PAGE``: a caller sees whether more wait)."""
        query = (
            _with_submission()
            .where(
                grade_versions.c.platform_id == platform_id,
                submissions.c.exam == exam,
                grade_versions.c.id > after,
            )
            .order_by(grade_versions.c.id)
            .limit(max(1, min(limit, MAX_PAGE + 1)))
        )
        with self.engine.connect() as conn:
            return [change_of(row) for row in conn.execute(query)]

    def history(self, submission_id: int) -> list[GradeChange]:
        """Every version of one submission's grade (the store's id), oldest first."""
        query = (
            _with_submission()
            .where(grade_versions.c.submission_id == submission_id)
            .order_by(grade_versions.c.version)
        )
        with self.engine.connect() as conn:
            return [change_of(row) for row in conn.execute(query)]


def _with_submission() -> sa.Select:
    return sa.select(grade_versions, submissions.c.external_id, submissions.c.exam).join(
        submissions, submissions.c.id == grade_versions.c.submission_id
    )


def change_of(row) -> GradeChange:
    """A version row (with its submission's ``external_id`` and ``exam``) as a change."""
    return GradeChange(
        cursor=row.id,
        submission_id=row.external_id,
        exam=row.exam,
        version=row.version,
        cause=row.cause,
        actor=row.actor,
        rubric_version=row.rubric_version,
        previous_status=row.previous_status,
        previous_score=row.previous_score,
        status=row.status,
        score=row.score,
        at=row.created_at,
        grade=Grade.model_validate(row.record),
    )
