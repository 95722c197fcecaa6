"""instructors: their keys and exams, human scores, grade overrides, review resolution

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "instructors",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("key_id", sa.String(length=32), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key_id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "instructor_exams",
        sa.Column("instructor_id", sa.Integer(), nullable=False),
        sa.Column("exam", sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(["instructor_id"], ["instructors.id"]),
        sa.PrimaryKeyConstraint("instructor_id", "exam"),
    )
    op.create_table(
        "human_scores",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("instructor_id", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("criteria", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["instructor_id"], ["instructors.id"]),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "submission_id", "instructor_id", name="uq_human_submission_instructor"
        ),
    )
    op.create_table(
        "grade_overrides",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("instructor", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("grade_overrides", schema=None) as batch_op:
        batch_op.create_index("ix_overrides_submission", ["submission_id"], unique=False)
    op.create_table(
        "service_secrets",
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("value", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    with op.batch_alter_table("review_queue", schema=None) as batch_op:
        batch_op.add_column(sa.Column("resolved_by", sa.String(length=100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("review_queue", schema=None) as batch_op:
        batch_op.drop_column("resolved_by")
    op.drop_table("service_secrets")
    with op.batch_alter_table("grade_overrides", schema=None) as batch_op:
        batch_op.drop_index("ix_overrides_submission")
    op.drop_table("grade_overrides")
    op.drop_table("human_scores")
    op.drop_table("instructor_exams")
    op.drop_table("instructors")
