"""The test suite's own throwaway PostgreSQL cluster (``tests/postgres_cluster.py``): it starts
where the server's binaries are installed, answers, and leaves nothing behind when stopped."""

from __future__ import annotations

import pytest

from tests.postgres_cluster import Cluster, server_binaries


def test_a_throwaway_cluster_answers_and_is_removed_when_stopped():
    binaries = server_binaries()
    if binaries is None:
        pytest.skip("the PostgreSQL server is not installed (Debian package postgresql)")
    import sqlalchemy as sa

    cluster = Cluster.start(binaries)
    try:
        engine = sa.create_engine(cluster.url)
        with engine.connect() as conn:
            assert conn.execute(sa.text("SHOW fsync")).scalar() == "off"
            assert conn.execute(sa.text("SELECT 1")).scalar() == 1
        engine.dispose()
    finally:
        cluster.stop()
    assert not cluster.folder.exists() and not cluster.running
    with pytest.raises(sa.exc.OperationalError):
        sa.create_engine(cluster.url).connect()
