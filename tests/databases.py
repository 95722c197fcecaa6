"""The service's databases for tests: a SQLite file, or a fresh database on a real PostgreSQL.

``GRADER_TEST_POSTGRES_URL`` names a server (``.ci/run`` starts a throwaway cluster and sets it,
e.g. ``postgresql+psycopg://postgres@127.0.0.1:PORT/postgres``); each test gets a database of its
own on it, dropped afterwards. Without a URL the PostgreSQL cases skip, unless
``GRADER_REQUIRE_POSTGRES=1`` (CI), which turns the skip into a failure.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

BACKENDS = ("sqlite", "postgresql")


def postgres_admin_url() -> str | None:
    url = os.environ.get("GRADER_TEST_POSTGRES_URL")
    if url:
        return url
    if os.environ.get("GRADER_REQUIRE_POSTGRES") == "1":
        pytest.fail("GRADER_REQUIRE_POSTGRES=1 but GRADER_TEST_POSTGRES_URL is not set")
    pytest.skip("no PostgreSQL server: set GRADER_TEST_POSTGRES_URL (.ci/run starts one)")


@contextmanager
def fresh_database(backend: str, folder: Path) -> Iterator[str]:
    """The URL of an empty database of ``backend``: a file in ``folder``, or a new database on
    the PostgreSQL server, dropped (with its connections) on exit."""
    if backend == "sqlite":
        yield f"sqlite:///{folder / 'grader.db'}"
        return
    import sqlalchemy as sa

    admin_url = sa.make_url(postgres_admin_url())
    name = f"grader_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield admin_url.set(database=name).render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def backend_params(*backends: str) -> list:
    """pytest params for the ``database_url`` fixture, each marked with its backend's id."""
    return [pytest.param(b, id=b) for b in backends or BACKENDS]
