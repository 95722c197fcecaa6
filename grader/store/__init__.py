"""The service's durable store: platforms, submissions, grades, review queue, webhook deliveries.

SQLite file by default, PostgreSQL by URL. Every write a redelivered task can repeat is
idempotent: a grade is unique per (submission, rubric version) and inserted-or-ignored, and
the submission is marked graded in the same transaction, so grading twice stores one grade.
The schema is owned by the Alembic migrations in ``grader/migrations``; ``Store.migrate``
brings a database to the head revision.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from grader.models import Grade
from grader.store.records import (
    GRADE_EVENT,
    AnswerRow,
    Delivery,
    HumanEntry,
    IdConflict,
    Instructor,
    NewSubmission,
    Override,
    Platform,
    StoredSubmission,
    body_hash,
    overridden,
    utcnow,
)
from grader.store.schema import (
    dead_letters,
    grade_overrides,
    grades,
    human_scores,
    instructor_exams,
    instructors,
    metadata,
    platform_exams,
    platforms,
    review_queue,
    service_secrets,
    submissions,
    webhook_deliveries,
)

__all__ = [
    "AnswerRow",
    "Delivery",
    "HumanEntry",
    "IdConflict",
    "Instructor",
    "NewSubmission",
    "Override",
    "Platform",
    "Store",
    "StoredSubmission",
    "body_hash",
    "metadata",
    "utcnow",
]


class Store:
    """All reads and writes of the service, each one short transaction."""

    def __init__(self, url: str):
        self.url = url
        self.engine = _engine(url)

    def migrate(self) -> None:
        """Bring the schema to the newest migration (idempotent)."""
        from alembic import command

        command.upgrade(alembic_config(self.url), "head")

    def ping(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))

    # --- platforms -----------------------------------------------------------------------

    def add_platform(
        self,
        name: str,
        exams: Sequence[str],
        key_id: str,
        key_hash: str,
        webhook_secret: str,
        webhook_url: str | None = None,
    ) -> int:
        with self.engine.begin() as conn:
            platform_id = conn.execute(
                platforms.insert().values(
                    name=name,
                    key_id=key_id,
                    key_hash=key_hash,
                    webhook_url=webhook_url,
                    webhook_secret=webhook_secret,
                    created_at=utcnow(),
                )
            ).inserted_primary_key[0]
            if exams:
                conn.execute(
                    platform_exams.insert(),
                    [{"platform_id": platform_id, "exam": e} for e in sorted(set(exams))],
                )
        return platform_id

    def platform_by_key_id(self, key_id: str) -> Platform | None:
        with self.engine.connect() as conn:
            row = conn.execute(platforms.select().where(platforms.c.key_id == key_id)).first()
            return _platform(conn, row) if row else None

    def platform_by_name(self, name: str) -> Platform | None:
        with self.engine.connect() as conn:
            row = conn.execute(platforms.select().where(platforms.c.name == name)).first()
            return _platform(conn, row) if row else None

    def list_platforms(self) -> list[Platform]:
        with self.engine.connect() as conn:
            rows = conn.execute(platforms.select().order_by(platforms.c.name)).all()
            return [_platform(conn, row) for row in rows]

    # --- intake --------------------------------------------------------------------------

    def submit(
        self, platform_id: int, items: Sequence[NewSubmission]
    ) -> list[tuple[StoredSubmission, bool]]:
        """Store new submissions as ``queued``; (stored, created) per item, same order.

        A repeated id with the same body returns the stored one (created False); a repeated
        id with a different body raises IdConflict and stores nothing of the request.
        """
        for attempt in range(2):
            try:
                return self._submit(platform_id, items)
            except IntegrityError:  # a concurrent post of the same id won the race
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _submit(
        self, platform_id: int, items: Sequence[NewSubmission]
    ) -> list[tuple[StoredSubmission, bool]]:
        by_id: dict[str, NewSubmission] = {}
        conflicts = []
        for item in items:
            first = by_id.setdefault(item.external_id, item)
            if first.body_hash != item.body_hash:
                conflicts.append(item.external_id)
        now = utcnow()
        with self.engine.begin() as conn:
            existing = {}
            ids = list(by_id)
            for start in range(0, len(ids), 500):
                rows = conn.execute(
                    submissions.select().where(
                        submissions.c.platform_id == platform_id,
                        submissions.c.external_id.in_(ids[start : start + 500]),
                    )
                ).all()
                existing.update({row.external_id: row for row in rows})
            conflicts += [i for i, row in existing.items() if row.body_hash != by_id[i].body_hash]
            if conflicts:
                raise IdConflict(sorted(set(conflicts)))
            new = [item for i, item in by_id.items() if i not in existing]
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
                            "status": "queued",
                            "enqueued_at": now,
                            "created_at": now,
                        }
                        for item in new
                    ],
                )
                created = {i.external_id for i in new}
                for start in range(0, len(new), 500):
                    rows = conn.execute(
                        submissions.select().where(
                            submissions.c.platform_id == platform_id,
                            submissions.c.external_id.in_(
                                [i.external_id for i in new[start : start + 500]]
                            ),
                        )
                    ).all()
                    existing.update({row.external_id: row for row in rows})
            else:
                created = set()
        return [
            (_stored(existing[item.external_id]), item.external_id in created) for item in items
        ]

    def submission(self, platform_id: int, external_id: str) -> StoredSubmission | None:
        """One submission of a platform with its newest grade, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(
                submissions.select().where(
                    submissions.c.platform_id == platform_id,
                    submissions.c.external_id == external_id,
                )
            ).first()
            if row is None:
                return None
            grade = _newest_grade(conn, row.id)
            override = _newest_override(conn, row.id)
        return _stored(row, grade, override)

    def export(self, platform_id: int, exam: str) -> Iterator[StoredSubmission]:
        """Every submission of a platform to an exam with its newest grade, in id order."""
        other = grades.alias("newer")
        newest = (
            sa.select(sa.func.max(other.c.id))
            .where(other.c.submission_id == submissions.c.id)
            .correlate(submissions)
            .scalar_subquery()
        )
        query = (
            sa.select(submissions, grades.c.record)
            .select_from(submissions.outerjoin(grades, grades.c.id == newest))
            .where(submissions.c.platform_id == platform_id, submissions.c.exam == exam)
            .order_by(submissions.c.id)
        )
        with self.engine.connect() as conn:
            overrides = _newest_overrides(
                conn, sa.select(submissions.c.id).where(
                    submissions.c.platform_id == platform_id, submissions.c.exam == exam
                )
            )  # fmt: skip
            for row in conn.execution_options(yield_per=500).execute(query):
                yield _stored(row, row.record, overrides.get(row.id))

    # --- grading -------------------------------------------------------------------------

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
                .where(submissions.c.status == "queued", submissions.c.enqueued_at < cutoff)
                .order_by(submissions.c.id)
                .limit(limit)
            ).scalars().all()  # fmt: skip
            claimed = []
            for start in range(0, len(candidates), 500):
                claimed += conn.execute(
                    submissions.update()
                    .where(
                        submissions.c.id.in_(candidates[start : start + 500]),
                        submissions.c.status == "queued",
                        submissions.c.enqueued_at < cutoff,
                    )
                    .values(enqueued_at=now)
                    .returning(*submissions.c)
                ).all()
        return [_stored(row) for row in sorted(claimed, key=lambda r: r.id)]

    def queued(self, ids: Sequence[int]) -> list[StoredSubmission]:
        """Those of ``ids`` still waiting for a grade (a redelivered task skips the rest)."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                submissions.select()
                .where(submissions.c.id.in_(list(ids)), submissions.c.status == "queued")
                .order_by(submissions.c.id)
            ).all()
        return [_stored(row) for row in rows]

    def cohort(
        self, platform_id: int, exam: str, question_ids: Sequence[str]
    ) -> list[StoredSubmission]:
        """A platform's answers to some questions of an exam, graded or not: the cohort that
        off-topic, near-duplicate and group signals compare a new answer with."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                submissions.select()
                .where(
                    submissions.c.platform_id == platform_id,
                    submissions.c.exam == exam,
                    submissions.c.question_id.in_(list(question_ids)),
                )
                .order_by(submissions.c.id)
            ).all()
        return [_stored(row) for row in rows]

    def record(self, results: Sequence[tuple[StoredSubmission, Grade]]) -> list[int]:
        """Store grades and mark their submissions graded, in one transaction; idempotent.

        Returns the ids of pending webhook deliveries for these submissions, so the caller
        can send them once the grades are safely committed.
        """
        if not results:
            return []
        now = utcnow()
        with self.engine.begin() as conn:
            _insert_ignore(
                conn,
                grades,
                [
                    {
                        "submission_id": s.id,
                        "rubric_version": _rubric_version(g),
                        "status": g.status.value,
                        "score": g.score,
                        "needs_review": g.needs_review,
                        "judge_latency_s": g.provenance.get("latency_s"),
                        "record": g.model_dump(mode="json"),
                        "created_at": now,
                    }
                    for s, g in results
                ],
            )
            _insert_ignore(
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
            ids = [s.id for s, _ in results]
            conn.execute(
                submissions.update()
                .where(submissions.c.id.in_(ids), submissions.c.status != "graded")
                .values(status="graded", graded_at=now, error=None)
            )
            hooked = conn.execute(
                sa.select(submissions.c.id, submissions.c.platform_id)
                .join(platforms, platforms.c.id == submissions.c.platform_id)
                .where(submissions.c.id.in_(ids), platforms.c.webhook_url.is_not(None))
            ).all()
            _insert_ignore(
                conn,
                webhook_deliveries,
                [
                    {
                        "platform_id": row.platform_id,
                        "submission_id": row.id,
                        "event": GRADE_EVENT,
                        "status": "pending",
                        "attempts": 0,
                        "next_attempt_at": now,
                        "created_at": now,
                    }
                    for row in hooked
                ],
            )
            return list(
                conn.execute(
                    sa.select(webhook_deliveries.c.id).where(
                        webhook_deliveries.c.submission_id.in_(ids),
                        webhook_deliveries.c.status == "pending",
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
                .where(submissions.c.id.in_(list(submission_ids)), submissions.c.status == "queued")
                .values(status="failed", error=error)
            )

    # --- webhooks ------------------------------------------------------------------------

    def delivery(self, delivery_id: int) -> Delivery | None:
        """A delivery with its destination and the payload to send."""
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(
                    webhook_deliveries,
                    platforms.c.webhook_url,
                    platforms.c.webhook_secret,
                    submissions.c.external_id,
                    submissions.c.exam,
                )
                .join(platforms, platforms.c.id == webhook_deliveries.c.platform_id)
                .join(submissions, submissions.c.id == webhook_deliveries.c.submission_id)
                .where(webhook_deliveries.c.id == delivery_id)
            ).first()
            if row is None:
                return None
            record = _newest_grade(conn, row.submission_id)
            override = _newest_override(conn, row.submission_id)
        grade = overridden(
            Grade.model_validate({**record, "submission_id": row.external_id}), override
        )
        payload = {
            "event": row.event,
            "delivery_id": row.id,
            "exam": row.exam,
            "submission_id": row.external_id,
            "grade": grade.model_dump(mode="json"),
        }
        return Delivery(
            row.id, row.status, row.attempts, row.webhook_url, row.webhook_secret, payload
        )

    def delivery_succeeded(self, delivery_id: int) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                webhook_deliveries.update()
                .where(webhook_deliveries.c.id == delivery_id)
                .values(
                    status="delivered",
                    attempts=webhook_deliveries.c.attempts + 1,
                    delivered_at=utcnow(),
                    last_error=None,
                )
            )

    def delivery_failed(self, delivery_id: int, error: str, retry_in: timedelta | None) -> None:
        """One failed attempt: try again after ``retry_in``, or give up when it is None."""
        values = {"attempts": webhook_deliveries.c.attempts + 1, "last_error": error[:2000]}
        if retry_in is None:
            values["status"] = "failed"
        else:
            values["next_attempt_at"] = utcnow() + retry_in
        with self.engine.begin() as conn:
            conn.execute(
                webhook_deliveries.update()
                .where(
                    webhook_deliveries.c.id == delivery_id,
                    webhook_deliveries.c.status == "pending",
                )
                .values(**values)
            )

    def due_deliveries(self, limit: int = 1000) -> list[int]:
        """Pending deliveries whose next attempt is due."""
        with self.engine.connect() as conn:
            return list(
                conn.execute(
                    sa.select(webhook_deliveries.c.id)
                    .where(
                        webhook_deliveries.c.status == "pending",
                        webhook_deliveries.c.next_attempt_at <= utcnow(),
                    )
                    .order_by(webhook_deliveries.c.id)
                    .limit(limit)
                ).scalars()
            )

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
                                webhook_deliveries.c.status == "pending",
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

    # --- metrics -------------------------------------------------------------------------

    def counts(self) -> dict[str, dict[str, float]]:
        """Totals for the metrics endpoint, read from the store so every process agrees."""
        with self.engine.connect() as conn:
            by_status = dict(
                conn.execute(
                    sa.select(submissions.c.status, sa.func.count()).group_by(submissions.c.status)
                ).all()
            )
            deliveries = dict(
                conn.execute(
                    sa.select(webhook_deliveries.c.status, sa.func.count()).group_by(
                        webhook_deliveries.c.status
                    )
                ).all()
            )
            graded = conn.execute(sa.select(sa.func.count()).select_from(grades)).scalar()
            dead = conn.execute(sa.select(sa.func.count()).select_from(dead_letters)).scalar()
            latency = conn.execute(
                sa.select(
                    sa.func.count(grades.c.judge_latency_s), sa.func.sum(grades.c.judge_latency_s)
                )
            ).one()
            reviews = conn.execute(
                sa.select(sa.func.count())
                .select_from(review_queue)
                .where(review_queue.c.resolved_at.is_(None))
            ).scalar()
        return {
            "submissions": by_status,
            "deliveries": deliveries,
            "totals": {
                "grades": graded,
                "dead_letters": dead,
                "judged": latency[0],
                "judge_latency_s": latency[1] or 0.0,
                "open_reviews": reviews,
            },
        }

    # --- instructors ---------------------------------------------------------------------

    def add_instructor(self, name: str, exams: Sequence[str], key_id: str, key_hash: str) -> int:
        with self.engine.begin() as conn:
            instructor_id = conn.execute(
                instructors.insert().values(
                    name=name, key_id=key_id, key_hash=key_hash, created_at=utcnow()
                )
            ).inserted_primary_key[0]
            if exams:
                conn.execute(
                    instructor_exams.insert(),
                    [{"instructor_id": instructor_id, "exam": e} for e in sorted(set(exams))],
                )
        return instructor_id

    def instructor(
        self,
        *,
        instructor_id: int | None = None,
        key_id: str | None = None,
        name: str | None = None,
    ) -> Instructor | None:
        """The instructor with this id, key id or name, or None."""
        column, value = next(
            (c, v)
            for c, v in (
                (instructors.c.id, instructor_id),
                (instructors.c.key_id, key_id),
                (instructors.c.name, name),
            )
            if v is not None
        )
        with self.engine.connect() as conn:
            row = conn.execute(instructors.select().where(column == value)).first()
            return _instructor(conn, row) if row else None

    def list_instructors(self) -> list[Instructor]:
        with self.engine.connect() as conn:
            rows = conn.execute(instructors.select().order_by(instructors.c.name)).all()
            return [_instructor(conn, row) for row in rows]

    def secret(self, name: str, make: Callable[[], str]) -> str:
        """A server secret kept in the database: made once, then the same for every process."""
        with self.engine.begin() as conn:
            _insert_ignore(conn, service_secrets, [{"name": name, "value": make()}])
            return conn.execute(
                sa.select(service_secrets.c.value).where(service_secrets.c.name == name)
            ).scalar_one()

    def answers(self, exam: str, question_id: str | None = None) -> list[AnswerRow]:
        """Every submission to an exam (all platforms) with the judge's newest grade, the newest
        human score, the newest override and the open review, in submission order."""
        where = [submissions.c.exam == exam]
        if question_id is not None:
            where.append(submissions.c.question_id == question_id)
        return self._answer_rows(where)

    def answer(self, submission_id: int) -> AnswerRow | None:
        """One submission by the store's own id (the instructor pages' handle)."""
        rows = self._answer_rows([submissions.c.id == submission_id])
        return rows[0] if rows else None

    def _answer_rows(self, where: list) -> list[AnswerRow]:
        other = grades.alias("newer")
        newest = (
            sa.select(sa.func.max(other.c.id))
            .where(other.c.submission_id == submissions.c.id)
            .correlate(submissions)
            .scalar_subquery()
        )
        ids = sa.select(submissions.c.id).where(*where)
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(submissions, grades.c.record)
                .select_from(submissions.outerjoin(grades, grades.c.id == newest))
                .where(*where)
                .order_by(submissions.c.id)
            ).all()
            overrides = _newest_overrides(conn, ids)
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
                _stored(row, row.record), humans.get(row.id), overrides.get(row.id),
                reviews.get(row.id),
            )
            for row in rows
        ]  # fmt: skip

    def set_human_score(
        self,
        submission_id: int,
        instructor_id: int,
        score: float,
        criteria: dict[str, float] | None,
    ) -> None:
        """The instructor's score of an answer; entering it again replaces it (one per pair)."""
        values = {"score": score, "criteria": criteria, "created_at": utcnow()}
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
                _insert_ignore(
                    conn,
                    human_scores,
                    [{"submission_id": submission_id, "instructor_id": instructor_id, **values}],
                )

    def add_override(self, submission_id: int, score: float, reason: str, instructor: str) -> bool:
        """Override the grade and close its review; the same override twice is stored once.

        Overrides are kept as a history (who, when, why); the newest wins.
        """
        now = utcnow()
        with self.engine.begin() as conn:
            newest = _newest_override(conn, submission_id)
            if newest and (newest.score, newest.reason, newest.instructor) == (
                score, reason, instructor,
            ):  # fmt: skip
                return False
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
        return True

    def accept_judge(self, submission_id: int, instructor: str) -> bool:
        """Mark the judge's grade reviewed as it stands; False when nothing was open."""
        with self.engine.begin() as conn:
            return _resolve(conn, submission_id, instructor, utcnow()) > 0


def alembic_config(url: str):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parents[1] / "migrations"))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def _engine(url: str) -> Engine:
    if not url.startswith("sqlite"):
        return sa.create_engine(url, pool_pre_ping=True)
    # API and workers share the file: WAL lets readers run beside the one writer, and the
    # busy timeout makes a writer wait for the lock instead of failing at once.
    engine = sa.create_engine(url, connect_args={"timeout": 60})

    @sa.event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=60000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine


def _insert_ignore(conn: Connection, table: sa.Table, rows: list[dict]) -> None:
    """INSERT ... ON CONFLICT DO NOTHING: the row a redelivered task writes again is skipped."""
    if not rows:
        return
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    conn.execute(insert(table).on_conflict_do_nothing(), rows)


def _rubric_version(grade: Grade) -> str:
    return grade.provenance.get("rubric_version") or ""


def _platform(conn: Connection, row) -> Platform:
    exams = conn.execute(
        sa.select(platform_exams.c.exam).where(platform_exams.c.platform_id == row.id)
    ).scalars()
    return Platform(
        row.id, row.name, row.key_hash, row.webhook_url, row.webhook_secret, frozenset(exams)
    )


def _stored(row, record: dict | None = None, override: Override | None = None) -> StoredSubmission:
    """The submission with its grade; an instructor's override, when given, wins."""
    grade = None
    if record is not None:
        grade = overridden(
            Grade.model_validate({**record, "submission_id": row.external_id}), override
        )
    return StoredSubmission(
        id=row.id,
        platform_id=row.platform_id,
        external_id=row.external_id,
        exam=row.exam,
        question_id=row.question_id,
        answer=row.answer,
        student=row.student,
        status=row.status,
        created_at=row.created_at,
        graded_at=row.graded_at,
        error=row.error,
        grade=grade,
    )


def _instructor(conn: Connection, row) -> Instructor:
    exams = conn.execute(
        sa.select(instructor_exams.c.exam).where(instructor_exams.c.instructor_id == row.id)
    ).scalars()
    return Instructor(row.id, row.name, row.key_hash, frozenset(exams))


def _override(row) -> Override:
    return Override(row.score, row.reason, row.instructor, row.created_at)


def _newest_grade(conn: Connection, submission_id: int) -> dict | None:
    """The judge's newest grade record of a submission (a re-grade adds a row)."""
    return conn.execute(
        sa.select(grades.c.record)
        .where(grades.c.submission_id == submission_id)
        .order_by(grades.c.id.desc())
        .limit(1)
    ).scalar()


def _newest_override(conn: Connection, submission_id: int) -> Override | None:
    row = conn.execute(
        grade_overrides.select()
        .where(grade_overrides.c.submission_id == submission_id)
        .order_by(grade_overrides.c.id.desc())
        .limit(1)
    ).first()
    return _override(row) if row else None


def _newest_overrides(conn: Connection, submission_ids) -> dict[int, Override]:
    """The newest override per submission among ``submission_ids`` (a select of ids)."""
    rows = conn.execute(
        grade_overrides.select()
        .where(grade_overrides.c.submission_id.in_(submission_ids))
        .order_by(grade_overrides.c.id)
    )
    return {row.submission_id: _override(row) for row in rows}


def _resolve(conn: Connection, submission_id: int, instructor: str, now) -> int:
    return conn.execute(
        review_queue.update()
        .where(review_queue.c.submission_id == submission_id, review_queue.c.resolved_at.is_(None))
        .values(resolved_at=now, resolved_by=instructor)
    ).rowcount
