"""What platforms post and read back: storing submissions idempotently, one submission with
its grade, and an exam's export."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from grader.models import SubmissionStatus
from grader.service.store import rows
from grader.service.store.records import (
    NewSubmission,
    QueueFull,
    StoredIdConflict,
    StoredSubmission,
    utcnow,
)
from grader.service.store.schema import platforms, submissions

_IN_CHUNK = 500  # ids per IN (...): well under every database's parameter limit


class Intake:
    def __init__(self, engine: Engine):
        self.engine = engine

    def submit(
        self, platform_id: int, items: Sequence[NewSubmission], max_queued: int | None = None
    ) -> list[tuple[StoredSubmission, bool]]:
        """Store new submissions as ``queued``; (stored, created) per item, same order.

        A repeated id with the same body returns the stored one (created False); a repeated
        id with a different body raises StoredIdConflict and stores nothing of the request. When the
        new ones would make more than ``max_queued`` of the platform's submissions queued,
        QueueFull, and nothing is stored.
        """
        for attempt in range(2):
            try:
                return self._submit(platform_id, items, max_queued)
            except IntegrityError:  # a concurrent post of the same id won the race
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _submit(
        self, platform_id: int, items: Sequence[NewSubmission], max_queued: int | None
    ) -> list[tuple[StoredSubmission, bool]]:
        by_id: dict[str, NewSubmission] = {}
        conflicts = []
        for item in items:
            first = by_id.setdefault(item.external_id, item)
            if first.body_hash != item.body_hash:
                conflicts.append(item.external_id)
        now = utcnow()
        with self.engine.begin() as conn:
            existing = _by_external_id(conn, platform_id, list(by_id))
            conflicts += [i for i, row in existing.items() if row.body_hash != by_id[i].body_hash]
            if conflicts:
                raise StoredIdConflict(sorted(set(conflicts)))
            new = [item for i, item in by_id.items() if i not in existing]
            if new and max_queued is not None:
                _lock_platform(conn, platform_id)
            if new:
                conn.execute(
                    submissions.insert(),
                    [
                        {
                            "platform_id": platform_id,
                            "external_id": item.external_id,
                            "exam": item.exam,
                            "question_id": item.question_id,
                            "student": item.student,
                            "answer": item.answer,
                            "body_hash": item.body_hash,
                            "status": SubmissionStatus.QUEUED.value,
                            "enqueued_at": now,
                            "created_at": now,
                        }
                        for item in new
                    ],
                )
                if max_queued is not None:
                    _check_room(conn, platform_id, len(new), max_queued)
                existing.update(_by_external_id(conn, platform_id, [i.external_id for i in new]))
        created = {i.external_id for i in new}
        return [
            (rows.stored(existing[item.external_id]), item.external_id in created) for item in items
        ]

    def submission(self, platform_id: int, external_id: str) -> StoredSubmission | None:
        """One submission of a platform with the grade it reads (its newest grade version:
        the instructors' grade wins) and that version's number, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(
                rows.with_current_grade(
                    submissions.c.platform_id == platform_id,
                    submissions.c.external_id == external_id,
                )
            ).first()
        return rows.current(row) if row is not None else None

    def export(self, platform_id: int, exam: str) -> Iterator[StoredSubmission]:
        """Every submission of a platform to an exam with its current grade version, in id
        order."""
        where = (submissions.c.platform_id == platform_id, submissions.c.exam == exam)
        with self.engine.connect() as conn:
            for row in conn.execution_options(yield_per=500).execute(
                rows.with_current_grade(*where)
            ):
                yield rows.current(row)


def _lock_platform(conn, platform_id: int) -> None:
    """PostgreSQL: concurrent posts of one platform (any API process) wait here for each other,
    so each counts the queue with the others' rows in it (SQLite has no FOR UPDATE: its one
    write lock, taken by the insert, does the same).

    ``FOR NO KEY UPDATE``, not ``FOR UPDATE``: every row inserted with a foreign key to the
    platform (a worker's webhook deliveries, in the transaction that stores its grades) takes
    a key-share lock on the platform's row for the rest of its transaction, which ``FOR
    UPDATE`` would wait for: posts queued behind the workers' grading transactions for tens
    of seconds under load. ``FOR NO KEY UPDATE`` waits only for other posts."""
    conn.execute(
        sa.select(platforms.c.id)
        .where(platforms.c.id == platform_id)
        .with_for_update(key_share=True)
    ).first()


def _check_room(conn, platform_id: int, new: int, cap: int) -> None:
    """QueueFull (rolling the insert back) when the ``new`` rows just inserted put more than
    the cap of the platform's submissions in the queue. Counted after the insert: by then this
    transaction holds SQLite's one write lock, or PostgreSQL's lock on the platform's row, so
    no concurrent post can be counted twice or missed."""
    queued = conn.execute(
        sa.select(sa.func.count())
        .select_from(submissions)
        .where(
            submissions.c.platform_id == platform_id,
            submissions.c.status == SubmissionStatus.QUEUED.value,
        )
    ).scalar_one()
    if queued > cap:
        raise QueueFull(queued - new, new, cap)


def _by_external_id(conn, platform_id: int, external_ids: list[str]) -> dict:
    found = {}
    for start in range(0, len(external_ids), _IN_CHUNK):
        chunk = external_ids[start : start + _IN_CHUNK]
        found.update(
            {
                row.external_id: row
                for row in conn.execute(
                    submissions.select().where(
                        submissions.c.platform_id == platform_id,
                        submissions.c.external_id.in_(chunk),
                    )
                )
            }
        )
    return found
