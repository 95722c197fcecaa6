"""grade versions: every change to a grade, and a webhook delivery per version

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-05

Existing grades get their history written as platforms read them before this release: version
1 is the newest grade with the newest override winning (what ``grade.completed`` announced;
the existing deliveries are tied to it). From this release an instructor's score is the grade
too, so where the newest instructor's act is a score that gives another grade, version 2
(cause ``score``) is written with a pending ``grade.updated`` delivery: platforms hear of it.
The code is self-contained (plain dicts): it must read the same in every later release.
"""

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

SCORED_REASON = "scored by an instructor"


def upgrade() -> None:
    op.create_table(
        "grade_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("cause", sa.String(length=32), nullable=False),
        sa.Column("actor", sa.String(length=100), nullable=True),
        sa.Column("rubric_version", sa.String(length=64), nullable=True),
        sa.Column("previous_status", sa.String(length=16), nullable=True),
        sa.Column("previous_score", sa.Float(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["platform_id"], ["platforms.id"]),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("submission_id", "version", name="uq_grade_versions_submission"),
    )
    with op.batch_alter_table("grade_versions", schema=None) as batch_op:
        batch_op.create_index("ix_grade_versions_platform", ["platform_id", "id"], unique=False)
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("version_id", sa.Integer(), nullable=True))
        batch_op.drop_constraint("uq_deliveries_submission_event", type_="unique")
        batch_op.create_unique_constraint("uq_deliveries_version", ["version_id"])
        batch_op.create_foreign_key(
            "fk_webhook_deliveries_version_id_grade_versions",
            "grade_versions",
            ["version_id"],
            ["id"],
        )
        batch_op.create_index("ix_deliveries_submission", ["submission_id", "id"], unique=False)
    _backfill(op.get_bind())


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_deliveries_submission")
        batch_op.drop_constraint(
            "fk_webhook_deliveries_version_id_grade_versions", type_="foreignkey"
        )
        batch_op.drop_constraint("uq_deliveries_version", type_="unique")
        batch_op.drop_column("version_id")
        batch_op.create_unique_constraint(
            "uq_deliveries_submission_event", ["submission_id", "event"]
        )
    with op.batch_alter_table("grade_versions", schema=None) as batch_op:
        batch_op.drop_index("ix_grade_versions_platform")
    op.drop_table("grade_versions")


# --- the history of the grades stored before -----------------------------------------------

_meta = sa.MetaData()
_submissions = sa.Table(
    "submissions",
    _meta,
    sa.Column("id", sa.Integer),
    sa.Column("platform_id", sa.Integer),
    sa.Column("external_id", sa.String),
)
_platforms = sa.Table(
    "platforms", _meta, sa.Column("id", sa.Integer), sa.Column("webhook_url", sa.String)
)
_grades = sa.Table(
    "grades",
    _meta,
    sa.Column("id", sa.Integer),
    sa.Column("submission_id", sa.Integer),
    sa.Column("record", sa.JSON),
    sa.Column("created_at", sa.DateTime),
)
_overrides = sa.Table(
    "grade_overrides",
    _meta,
    sa.Column("id", sa.Integer),
    sa.Column("submission_id", sa.Integer),
    sa.Column("score", sa.Float),
    sa.Column("reason", sa.Text),
    sa.Column("instructor", sa.String),
    sa.Column("created_at", sa.DateTime),
)
_humans = sa.Table(
    "human_scores",
    _meta,
    sa.Column("id", sa.Integer),
    sa.Column("submission_id", sa.Integer),
    sa.Column("instructor_id", sa.Integer),
    sa.Column("score", sa.Float),
    sa.Column("criteria", sa.JSON),
    sa.Column("created_at", sa.DateTime),
)
_instructors = sa.Table(
    "instructors", _meta, sa.Column("id", sa.Integer), sa.Column("name", sa.String)
)
_versions = sa.Table(
    "grade_versions",
    _meta,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("submission_id", sa.Integer),
    sa.Column("platform_id", sa.Integer),
    sa.Column("version", sa.Integer),
    sa.Column("cause", sa.String),
    sa.Column("actor", sa.String),
    sa.Column("rubric_version", sa.String),
    sa.Column("previous_status", sa.String),
    sa.Column("previous_score", sa.Float),
    sa.Column("status", sa.String),
    sa.Column("score", sa.Float),
    sa.Column("record", sa.JSON),
    sa.Column("created_at", sa.DateTime),
)
_deliveries = sa.Table(
    "webhook_deliveries",
    _meta,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("platform_id", sa.Integer),
    sa.Column("submission_id", sa.Integer),
    sa.Column("event", sa.String),
    sa.Column("status", sa.String),
    sa.Column("attempts", sa.Integer),
    sa.Column("next_attempt_at", sa.DateTime),
    sa.Column("created_at", sa.DateTime),
    sa.Column("version_id", sa.Integer),
)


def _backfill(conn) -> None:
    now = datetime.now(UTC).replace(tzinfo=None)
    newest = sa.select(sa.func.max(_grades.c.id)).group_by(_grades.c.submission_id)
    found = conn.execute(
        sa.select(
            _submissions.c.id, _submissions.c.platform_id, _submissions.c.external_id,
            _grades.c.record, _grades.c.created_at, _platforms.c.webhook_url,
        )
        .join(_grades, _grades.c.submission_id == _submissions.c.id)
        .join(_platforms, _platforms.c.id == _submissions.c.platform_id)
        .where(_grades.c.id.in_(newest))
        .order_by(_submissions.c.id)
    ).all()  # fmt: skip
    overrides = {
        r.submission_id: r for r in conn.execute(_overrides.select().order_by(_overrides.c.id))
    }
    humans = {
        r.submission_id: r
        for r in conn.execute(
            sa.select(_humans, _instructors.c.name)
            .join(_instructors, _instructors.c.id == _humans.c.instructor_id)
            .order_by(_humans.c.created_at, _humans.c.id)
        )
    }
    for row in found:
        judge = dict(row.record, submission_id=row.external_id)
        override = overrides.get(row.id)
        first = _instructors_grade(judge, override, None) if override else judge
        first_id = _version(conn, row, 1, "engine", None, None, first, row.created_at)
        conn.execute(
            _deliveries.update()
            .where(_deliveries.c.submission_id == row.id)
            .values(version_id=first_id)
        )
        human = humans.get(row.id)
        if human is None or (override is not None and override.created_at >= human.created_at):
            continue
        scored = _instructors_grade(judge, human, human.criteria)
        if _material(scored) == _material(first):
            continue
        second = _version(conn, row, 2, "score", human.name, first, scored, now)
        if row.webhook_url:
            conn.execute(
                _deliveries.insert().values(
                    platform_id=row.platform_id, submission_id=row.id, event="grade.updated",
                    status="pending", attempts=0, next_attempt_at=now, created_at=now,
                    version_id=second,
                )
            )  # fmt: skip


def _version(conn, row, version, cause, actor, before, record, at) -> int:
    return conn.execute(
        _versions.insert().values(
            submission_id=row.id, platform_id=row.platform_id, version=version, cause=cause,
            actor=actor, rubric_version=(record.get("provenance") or {}).get("rubric_version"),
            previous_status=before["status"] if before else None,
            previous_score=before["score"] if before else None,
            status=record["status"], score=record["score"], record=record, created_at=at,
        )
    ).inserted_primary_key[0]  # fmt: skip


def _instructors_grade(judge: dict, act, criteria) -> dict:
    """The judge's grade record with an instructor's score in place (as the service shows it)."""
    reason = getattr(act, "reason", None) or SCORED_REASON
    by = getattr(act, "instructor", None) or act.name
    points = [dict(c, points=criteria[c["id"]]) if criteria and c["id"] in criteria else c
              for c in judge.get("criteria") or []]  # fmt: skip
    details = dict(judge.get("details") or {})
    details["override"] = {
        "score": act.score, "reason": reason, "by": by, "at": act.created_at.isoformat(),
        "judge": {"status": judge["status"], "score": judge["score"], "method": judge["method"]},
    }  # fmt: skip
    return dict(judge, status="graded", score=act.score, criteria=points, method="instructor",
                needs_review=False, details=details)  # fmt: skip


def _material(grade: dict) -> dict:
    return {
        "status": grade.get("status"),
        "score": grade.get("score"),
        "max_score": grade.get("max_score"),
        "method": grade.get("method"),
        "criteria": [(c.get("id"), c.get("points")) for c in grade.get("criteria") or []],
    }
