"""The service's databases for tests: a SQLite file, or a fresh database on a real PostgreSQL.

``GRADER_TEST_POSTGRES_URL`` names a server (``.ci/run`` starts a throwaway cluster and sets it,
e.g. ``postgresql+psycopg://postgres@127.0.0.1:PORT/postgres``). Without it, the first test that
needs PostgreSQL starts a throwaway cluster of its own (``tests/postgres_cluster.py``) when the
server's binaries are installed (Debian's ``postgresql``), stopped at the end of the session. Each
test gets a database of its own, dropped afterwards. With neither the PostgreSQL cases skip,
unless ``GRADER_REQUIRE_POSTGRES=1`` (CI), which turns the skip into a failure.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.postgres_cluster import Cluster, ClusterError, server_binaries

BACKENDS = ("sqlite", "postgresql")

_cluster: Cluster | None = None  # the session's own cluster, started by the first test needing it
_cluster_error: str | None = None  # why it could not start: said once per test, tried once


def postgres_admin_url() -> str:
    url = os.environ.get("GRADER_TEST_POSTGRES_URL")
    if url:
        return url
    url = _own_cluster_url()
    if url:
        return url
    why = _cluster_error or (
        "no PostgreSQL server: set GRADER_TEST_POSTGRES_URL or install the server "
        "(Debian package postgresql) for a throwaway cluster"
    )
    if os.environ.get("GRADER_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"GRADER_REQUIRE_POSTGRES=1 but {why}")
    pytest.skip(why)


def _own_cluster_url() -> str | None:
    """The URL of this session's throwaway cluster, started on first use; None where the
    binaries are not installed or the cluster failed to start (``_cluster_error`` says why)."""
    global _cluster, _cluster_error
    if _cluster is None and _cluster_error is None:
        binaries = server_binaries()
        if binaries is None:
            return None
        try:
            _cluster = Cluster.start(binaries)
        except ClusterError as exc:
            _cluster_error = f"the throwaway PostgreSQL cluster did not start: {exc}"
    return _cluster.url if _cluster is not None else None


def stop_own_cluster() -> None:
    """Stop and remove the session's throwaway cluster, if one was started."""
    global _cluster
    if _cluster is not None:
        _cluster.stop()
        _cluster = None


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
