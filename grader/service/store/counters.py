"""Fixed-window request counters in the database, shared by every API process.

The request rate limit and the failed-login throttle count here. The database, not Redis:
it is the one store every API process reaches in both modes (``--inline`` has no Redis), and
each counted request already reads it for the key. A hit is one atomic upsert (``INSERT ...
ON CONFLICT DO UPDATE ... RETURNING``, on SQLite and PostgreSQL alike), so concurrent
processes never lose a count. A window's row is kept until it is an hour old: the first hit of
a bucket's new window deletes the stale rows of every bucket.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from grader.service.store.schema import rate_counters

KEEP_S = 3600  # windows older than this are deleted; every window is shorter


@dataclass(frozen=True)
class Window:
    count: int  # hits in the current window, this one included
    retry_after_s: int  # seconds until the next window begins, at least 1


class Counters:
    def __init__(self, engine: Engine):
        self.engine = engine

    def hit(self, bucket: str, window_s: int, now: float | None = None) -> Window:
        """Count one hit in ``bucket``'s current window of ``window_s`` seconds."""
        now = time.time() if now is None else now
        start = _start(now, window_s)
        with self.engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                from sqlalchemy.dialects.postgresql import insert
            else:
                from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
            statement = insert(rate_counters).values(bucket=bucket, window_start=start, count=1)
            count = conn.execute(
                statement.on_conflict_do_update(
                    index_elements=[rate_counters.c.bucket, rate_counters.c.window_start],
                    set_={"count": rate_counters.c.count + 1},
                ).returning(rate_counters.c.count)
            ).scalar_one()
            if count == 1:
                conn.execute(
                    rate_counters.delete().where(rate_counters.c.window_start < now - KEEP_S)
                )
        return Window(count, _retry_after(now, start, window_s))

    def count(self, bucket: str, window_s: int, now: float | None = None) -> Window:
        """The hits in ``bucket``'s current window, without counting one."""
        now = time.time() if now is None else now
        start = _start(now, window_s)
        with self.engine.connect() as conn:
            count = conn.execute(
                sa.select(rate_counters.c.count).where(
                    rate_counters.c.bucket == bucket, rate_counters.c.window_start == start
                )
            ).scalar_one_or_none()
        return Window(count or 0, _retry_after(now, start, window_s))


def _start(now: float, window_s: int) -> int:
    return int(now // window_s) * window_s


def _retry_after(now: float, start: int, window_s: int) -> int:
    return max(1, math.ceil(start + window_s - now))
