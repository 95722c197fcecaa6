"""Totals for the metrics endpoint, read from the store so every API process agrees."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from grader.service.store.schema import (
    dead_letters,
    grades,
    review_queue,
    submissions,
    webhook_deliveries,
)


class Metrics:
    def __init__(self, engine: Engine):
        self.engine = engine

    def counts(self) -> dict[str, dict[str, float]]:
        """Submissions and deliveries by status, and totals of grades, dead letters, judge
        latency and open reviews."""
        with self.engine.connect() as conn:
            by_status: dict[str, float] = dict(
                conn.execute(
                    sa.select(submissions.c.status, sa.func.count()).group_by(submissions.c.status)
                ).all()
            )
            deliveries: dict[str, float] = dict(
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
                "grades": graded or 0,
                "dead_letters": dead or 0,
                "judged": latency[0] or 0,
                "judge_latency_s": latency[1] or 0.0,
                "open_reviews": reviews or 0,
            },
        }
