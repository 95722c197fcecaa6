"""The webhook outbox: deliveries written with the grades, claimed, tried and settled.

A delivery row is made in the transaction that makes a grade version (``versions.settle``),
so a version never goes unannounced; what is sent is that version, as the platform saw it
then. One submission's deliveries go out in order: a later version waits while an earlier one
is pending (still being tried), so a platform's last received version is the newest.
"""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from grader.models import DeliveryStatus
from grader.service.store import rows
from grader.service.store.records import Delivery, GradeChange, utcnow
from grader.service.store.schema import (
    grade_versions,
    grades,
    platforms,
    submissions,
    webhook_deliveries,
)
from grader.service.store.versions import change_of

_PENDING = DeliveryStatus.PENDING.value


class Outbox:
    def __init__(self, engine: Engine):
        self.engine = engine

    def delivery(self, delivery_id: int) -> Delivery | None:
        """A delivery with its destination and the grade version it announces, as its
        platform sees it (a delivery made before versions: the grade as it stands now)."""
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(
                    webhook_deliveries,
                    platforms.c.webhook_url,
                    platforms.c.webhook_secret,
                    submissions.c.external_id,
                    submissions.c.exam,
                    grades.c.record,
                )
                .join(platforms, platforms.c.id == webhook_deliveries.c.platform_id)
                .join(submissions, submissions.c.id == webhook_deliveries.c.submission_id)
                .outerjoin(grades, grades.c.id == rows.newest_grade_id())
                .where(webhook_deliveries.c.id == delivery_id)
            ).first()
            if row is None:
                return None
            change = _version(conn, row.version_id) if row.version_id is not None else None
            override = rows.instructor_grades(conn, [row.submission_id]).get(row.submission_id)
            waiting = _earlier_pending(conn, row.submission_id, row.id)
        return Delivery(
            id=row.id,
            status=DeliveryStatus(row.status),
            attempts=row.attempts,
            url=row.webhook_url,
            secret=row.webhook_secret,
            event=row.event,
            exam=row.exam,
            submission_id=row.external_id,
            grade=change.grade
            if change is not None
            else rows.platform_grade(row.record, row.external_id, override),
            change=change,
            waiting=waiting,
        )

    def delivery_succeeded(self, delivery_id: int) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                webhook_deliveries.update()
                .where(webhook_deliveries.c.id == delivery_id)
                .values(
                    status=DeliveryStatus.DELIVERED.value,
                    attempts=webhook_deliveries.c.attempts + 1,
                    delivered_at=utcnow(),
                    last_error=None,
                )
            )

    def delivery_failed(self, delivery_id: int, error: str, retry_in: timedelta | None) -> None:
        """One failed attempt: try again after ``retry_in``, or give up when it is None."""
        values = {"attempts": webhook_deliveries.c.attempts + 1, "last_error": error[:2000]}
        if retry_in is None:
            values["status"] = DeliveryStatus.FAILED.value
        else:
            values["next_attempt_at"] = utcnow() + retry_in
        with self.engine.begin() as conn:
            conn.execute(
                webhook_deliveries.update()
                .where(
                    webhook_deliveries.c.id == delivery_id,
                    webhook_deliveries.c.status == _PENDING,
                )
                .values(**values)
            )

    def due_destinations(self, limit: int = 1000) -> list[tuple[int, str | None]]:
        """Pending deliveries whose next attempt is due, with the URL each goes to; of one
        submission's, only the oldest pending (its versions reach the platform in order)."""
        with self.engine.connect() as conn:
            return [
                (row.id, row.webhook_url)
                for row in conn.execute(
                    sa.select(webhook_deliveries.c.id, platforms.c.webhook_url)
                    .join(platforms, platforms.c.id == webhook_deliveries.c.platform_id)
                    .where(
                        webhook_deliveries.c.status == _PENDING,
                        webhook_deliveries.c.next_attempt_at <= utcnow(),
                        ~_has_earlier_pending(),
                    )
                    .order_by(webhook_deliveries.c.id)
                    .limit(limit)
                )
            ]

    def claim_overdue_deliveries(self, late_by: timedelta, limit: int = 10_000) -> list[int]:
        """Pending deliveries ``late_by`` past their time (their task is likely lost), claimed
        by moving their time to now, so the next sweep leaves them to the task sent now."""
        now = utcnow()
        with self.engine.begin() as conn:
            return sorted(
                conn.execute(
                    webhook_deliveries.update()
                    .where(
                        webhook_deliveries.c.id.in_(
                            sa.select(webhook_deliveries.c.id)
                            .where(
                                webhook_deliveries.c.status == _PENDING,
                                webhook_deliveries.c.next_attempt_at <= now - late_by,
                            )
                            .limit(limit)
                            .scalar_subquery()
                        ),
                        webhook_deliveries.c.next_attempt_at <= now - late_by,
                    )
                    .values(next_attempt_at=now)
                    .returning(webhook_deliveries.c.id)
                ).scalars()
            )


def _version(conn, version_id: int) -> GradeChange | None:
    row = conn.execute(
        sa.select(grade_versions, submissions.c.external_id, submissions.c.exam)
        .join(submissions, submissions.c.id == grade_versions.c.submission_id)
        .where(grade_versions.c.id == version_id)
    ).first()
    return change_of(row) if row is not None else None


def _has_earlier_pending() -> sa.Exists:
    """An older delivery of the same submission is still pending (correlated)."""
    earlier = webhook_deliveries.alias("earlier")
    return sa.exists().where(
        earlier.c.submission_id == webhook_deliveries.c.submission_id,
        earlier.c.id < webhook_deliveries.c.id,
        earlier.c.status == _PENDING,
    )


def _earlier_pending(conn, submission_id: int, delivery_id: int) -> bool:
    return (
        conn.execute(
            sa.select(webhook_deliveries.c.id)
            .where(
                webhook_deliveries.c.submission_id == submission_id,
                webhook_deliveries.c.id < delivery_id,
                webhook_deliveries.c.status == _PENDING,
            )
            .limit(1)
        ).first()
        is not None
    )
