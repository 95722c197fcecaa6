"""Who may use the service: platforms (API keys, webhook targets), instructors (login keys),
each with the exams they may touch, and the server secrets kept in the database.

Removing a platform or an instructor keeps its row (submissions, grades and human scores
still name it) and marks it removed: every lookup for a caller skips removed rows, so its key
stops working at once, and its name stays taken. An instructor's session generation is bumped
on logout and removal: cookies made in an older generation are refused.
"""

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
            ).inserted_primary_key[0]  # type: ignore[index]  # one row inserted: never None
            if exams:
                conn.execute(
                    platform_exams.insert(),
                    [{"platform_id": platform_id, "exam": e} for e in sorted(set(exams))],
                )
        return platform_id

    def platform_by_key_id(self, key_id: str) -> Platform | None:
        """The platform of a key id, unless removed."""
        with self.engine.connect() as conn:
            row = conn.execute(
                platforms.select().where(platforms.c.key_id == key_id, _live(platforms))
            ).first()
            return rows.platform(conn, row) if row else None

    def platform_by_name(self, name: str, include_removed: bool = False) -> Platform | None:
        where = [platforms.c.name == name] + ([] if include_removed else [_live(platforms)])
        with self.engine.connect() as conn:
            row = conn.execute(platforms.select().where(*where)).first()
            return rows.platform(conn, row) if row else None

    def list_platforms(self) -> list[Platform]:
        with self.engine.connect() as conn:
            found = conn.execute(
                platforms.select().where(_live(platforms)).order_by(platforms.c.name)
            ).all()
            return [rows.platform(conn, row) for row in found]

    def rotate_platform_key(self, name: str, key_id: str, key_hash: str) -> bool:
        """Give a platform a new key; the old one stops working with this commit. False when
        there is no such platform."""
        with self.engine.begin() as conn:
            changed = conn.execute(
                platforms.update()
                .where(platforms.c.name == name, _live(platforms))
                .values(key_id=key_id, key_hash=key_hash)
            ).rowcount
        return changed == 1

    def remove_platform(self, name: str) -> bool:
        """Mark a platform removed: its key stops working; what it posted stays."""
        with self.engine.begin() as conn:
            changed = conn.execute(
                platforms.update()
                .where(platforms.c.name == name, _live(platforms))
                .values(removed_at=utcnow())
            ).rowcount
        return changed == 1

    def add_instructor(self, name: str, exams: Sequence[str], key_id: str, key_hash: str) -> int:
        with self.engine.begin() as conn:
            instructor_id = conn.execute(
                instructors.insert().values(
                    name=name, key_id=key_id, key_hash=key_hash, created_at=utcnow()
                )
            ).inserted_primary_key[0]  # type: ignore[index]  # one row inserted: never None
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
        include_removed: bool = False,
    ) -> Instructor | None:
        """The instructor with this id, key id or name, or None (also when removed, unless
        ``include_removed``)."""
        column, value = next(
            (c, v)
            for c, v in (
                (instructors.c.id, instructor_id),
                (instructors.c.key_id, key_id),
                (instructors.c.name, name),
            )
            if v is not None
        )
        where = [column == value] + ([] if include_removed else [_live(instructors)])
        with self.engine.connect() as conn:
            row = conn.execute(instructors.select().where(*where)).first()
            return rows.instructor(conn, row) if row else None

    def list_instructors(self) -> list[Instructor]:
        with self.engine.connect() as conn:
            found = conn.execute(
                instructors.select().where(_live(instructors)).order_by(instructors.c.name)
            ).all()
            return [rows.instructor(conn, row) for row in found]

    def end_sessions(self, instructor_id: int) -> None:
        """Log an instructor out everywhere: every cookie made so far is refused."""
        with self.engine.begin() as conn:
            conn.execute(
                instructors.update()
                .where(instructors.c.id == instructor_id)
                .values(session_generation=instructors.c.session_generation + 1)
            )

    def remove_instructor(self, name: str) -> bool:
        """Mark an instructor removed and end their sessions; their scores stay, by name."""
        with self.engine.begin() as conn:
            changed = conn.execute(
                instructors.update()
                .where(instructors.c.name == name, _live(instructors))
                .values(
                    removed_at=utcnow(),
                    session_generation=instructors.c.session_generation + 1,
                )
            ).rowcount
        return changed == 1

    def secret(self, name: str, make: Callable[[], str]) -> str:
        """A server secret kept in the database: made once, then the same for every process."""
        with self.engine.begin() as conn:
            insert_ignore(conn, service_secrets, [{"name": name, "value": make()}])
            return conn.execute(
                sa.select(service_secrets.c.value).where(service_secrets.c.name == name)
            ).scalar_one()


def _live(table: sa.Table) -> sa.ColumnElement[bool]:
    return table.c.removed_at.is_(None)
