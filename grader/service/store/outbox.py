"""The webhook outbox: deliveries written with the grade versions, claimed, tried and settled.

A delivery row is made in the transaction that makes a grade version (``versions.settle``),
so a version never goes unannounced, and there is one delivery per version; what is sent is
that version, as the platform saw it then. Senders (``grader.service.courier``) claim what is
due for one try with a lease and settle it. One submission's deliveries go out in version
order: a later version waits while an earlier one is pending (being tried, or waiting for its
retry), so a platform's last received version is the newest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

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
        """A delivery with its destination and the grade version it announces."""
        found = self.deliveries([delivery_id])
        return found[0] if found else None

    def deliveries(self, delivery_ids: Sequence[int]) -> list[Delivery]:
        """Deliveries, in id order, with their destinations and the grade versions they
        announce, as their platforms saw them: one read for a batch of them. A delivery made
        before versions existed announces the grade as it stands now."""
        with self.engine.connect() as conn:
            found = conn.execute(
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
                .outerjoin(
                    grades,
                    sa.and_(
                        webhook_deliveries.c.version_id.is_(None),
                        grades.c.id == rows.newest_grade_id(),
                    ),
                )
                .where(webhook_deliveries.c.id.in_(list(delivery_ids)))
                .order_by(webhook_deliveries.c.id)
            ).all()
            changes = _changes(conn, [r.version_id for r in found if r.version_id is not None])
            unversioned = [r.submission_id for r in found if r.version_id is None]
            instructors = rows.instructor_grades(conn, unversioned) if unversioned else {}
        return [_delivery(row, changes.get(row.version_id), instructors) for row in found]

    def settle(
        self, delivered: Sequence[int], failed: Sequence[tuple[int, str, timedelta | None]]
    ) -> None:
        """The outcomes of tries, in one transaction: the ``delivered`` ones, and the
        ``failed`` ones with their error and the time to the next try (None: given up)."""
        now = utcnow()
        pending = webhook_deliveries.c.status == _PENDING
        with self.engine.begin() as conn:
            if delivered:
                conn.execute(
                    webhook_deliveries.update()
                    .where(webhook_deliveries.c.id.in_(list(delivered)), pending)
                    .values(
                        status=DeliveryStatus.DELIVERED.value,
                        attempts=webhook_deliveries.c.attempts + 1,
                        delivered_at=now,
                        last_error=None,
                    )
                )
            for delivery_id, error, retry_in in failed:
                values = {"attempts": webhook_deliveries.c.attempts + 1, "last_error": error[:2000]}
                if retry_in is None:
                    values["status"] = DeliveryStatus.FAILED.value
                else:
                    values["next_attempt_at"] = now + retry_in
                conn.execute(
                    webhook_deliveries.update()
                    .where(webhook_deliveries.c.id == delivery_id, pending)
                    .values(**values)
                )

    def claim_due(
        self,
        limit: int,
        lease: timedelta,
        pick: Callable[[list[tuple[int, str]]], list[int]] | None = None,
    ) -> list[Delivery]:
        """Take due deliveries for one try, read with their grades: of at most ``limit``
        pending ones whose next try is due, in outbox order, given to ``pick`` as (id, URL),
        those it picks (a sender's room per host). Their next try moves ``lease`` ahead, so no
        other sender takes them meanwhile, and one whose sender dies is due again when the
        lease ends; rows another sender is claiming at the moment are skipped, not waited for
        (PostgreSQL), and a row another sender claimed meanwhile is not taken (SQLite, where
        the claim is conditional). Without ``pick``: every due one.

        A delivery waits while an earlier one of its submission is pending (being tried, or
        waiting for its retry), so a submission's versions arrive in order, whichever sender
        sends them: no version is sent before the one before it is delivered or given up.
        Outbox order is version order: ``versions.settle`` writes a submission's next version
        (and its delivery) only once the one before it is committed."""
        earlier = webhook_deliveries.alias("earlier")
        now = utcnow()
        with self.engine.begin() as conn:
            due = conn.execute(
                sa.select(webhook_deliveries.c.id, platforms.c.webhook_url)
                .join(platforms, platforms.c.id == webhook_deliveries.c.platform_id)
                .where(
                    webhook_deliveries.c.status == _PENDING,
                    webhook_deliveries.c.next_attempt_at <= now,
                    platforms.c.webhook_url.is_not(None),
                    ~sa.exists().where(
                        earlier.c.submission_id == webhook_deliveries.c.submission_id,
                        earlier.c.status == _PENDING,
                        earlier.c.id < webhook_deliveries.c.id,
                    ),
                )
                .order_by(webhook_deliveries.c.id)
                .limit(limit)
                .with_for_update(of=webhook_deliveries, skip_locked=True)
            ).all()
            found = [(row.id, row.webhook_url) for row in due]
            picked = pick(found) if pick is not None else [i for i, _ in found]
            claimed: list[int] = []
            if picked:
                claimed = list(
                    conn.execute(
                        webhook_deliveries.update()
                        .where(
                            webhook_deliveries.c.id.in_(picked),
                            webhook_deliveries.c.status == _PENDING,
                            webhook_deliveries.c.next_attempt_at <= now,
                        )
                        .values(next_attempt_at=now + lease)
                        .returning(webhook_deliveries.c.id)
                    ).scalars()
                )
        return self.deliveries(sorted(claimed)) if claimed else []


def _delivery(row, change: GradeChange | None, instructors: dict) -> Delivery:
    grade = (
        change.grade
        if change is not None
        else rows.platform_grade(row.record, row.external_id, instructors.get(row.submission_id))
    )
    return Delivery(
        id=row.id,
        status=DeliveryStatus(row.status),
        attempts=row.attempts,
        url=row.webhook_url,
        secret=row.webhook_secret,
        event=row.event,
        exam=row.exam,
        submission_id=row.external_id,
        grade=grade,
        change=change,
    )


def _changes(conn: Connection, version_ids: list[int]) -> dict[int, GradeChange]:
    """The grade versions ``version_ids`` as changes, by id."""
    if not version_ids:
        return {}
    found = conn.execute(
        sa.select(grade_versions, submissions.c.external_id, submissions.c.exam)
        .join(submissions, submissions.c.id == grade_versions.c.submission_id)
        .where(grade_versions.c.id.in_(version_ids))
    )
    return {row.id: change_of(row) for row in found}
