"""Who may use the service: platforms (API keys, webhook targets), instructors (login keys),
each with the exams they may touch, and the server secrets kept in the database."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from grader.service.store import rows
from grader.service.store.engine import insert_ignore
from grader.service.store.records import Instructor, Platform, utcnow
from grader.service.store.schema import (
    instructor_exams,
    instructors,
    platform_exams,
    platforms,
    service_secrets,
)


class Accounts:
    def __init__(self, engine: Engine):
        self.engine = engine

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
            return rows.platform(conn, row) if row else None

    def platform_by_name(self, name: str) -> Platform | None:
        with self.engine.connect() as conn:
            row = conn.execute(platforms.select().where(platforms.c.name == name)).first()
            return rows.platform(conn, row) if row else None

    def list_platforms(self) -> list[Platform]:
        with self.engine.connect() as conn:
            found = conn.execute(platforms.select().order_by(platforms.c.name)).all()
            return [rows.platform(conn, row) for row in found]

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
            return rows.instructor(conn, row) if row else None

    def list_instructors(self) -> list[Instructor]:
        with self.engine.connect() as conn:
            found = conn.execute(instructors.select().order_by(instructors.c.name)).all()
            return [rows.instructor(conn, row) for row in found]

    def secret(self, name: str, make: Callable[[], str]) -> str:
        """A server secret kept in the database: made once, then the same for every process."""
        with self.engine.begin() as conn:
            insert_ignore(conn, service_secrets, [{"name": name, "value": make()}])
            return conn.execute(
                sa.select(service_secrets.c.value).where(service_secrets.c.name == name)
            ).scalar_one()
