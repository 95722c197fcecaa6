"""The one SQLAlchemy engine every repository shares, the schema's migrations, and the
insert-or-ignore that makes a redelivered task's writes harmless."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine


def make_engine(url: str) -> Engine:
    if not url.startswith("sqlite"):
        return sa.create_engine(url, pool_pre_ping=True)
    # API and workers share the file: WAL lets readers run beside the one writer, and the
    # busy timeout makes a writer wait for the lock instead of failing at once.
    engine = sa.create_engine(url, connect_args={"timeout": 60})

    @sa.event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=60000")
        # WAL stays set in the file; switching again needs the write lock, which a connection
        # opened beside busy ones would be refused ("database is locked"), so only when unset
        if cursor.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine


def alembic_config(url: str):
    """Alembic's configuration for ``url``, with the migrations in ``grader/service/migrations``."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parents[1] / "migrations"))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def migrate(url: str) -> None:
    """Bring the schema to the newest migration (idempotent)."""
    from alembic import command

    command.upgrade(alembic_config(url), "head")


def insert_ignore(conn: Connection, table: sa.Table, rows: list[dict]) -> None:
    """INSERT ... ON CONFLICT DO NOTHING: the row a redelivered task writes again is skipped."""
    if not rows:
        return
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
    conn.execute(insert(table).on_conflict_do_nothing(), rows)
