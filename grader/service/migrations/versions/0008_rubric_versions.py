"""rubric versions kept in the service, and regrades of a question's stored answers

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rubric_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("exam", sa.String(length=200), nullable=False),
        sa.Column("question_id", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("rubric", sa.JSON(), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("rubric_versions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_rubric_versions_exam", ["exam", "question_id", "id"], unique=False
        )
    op.create_table(
        "regrade_jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("exam", sa.String(length=200), nullable=False),
        sa.Column("question_id", sa.String(length=200), nullable=False),
        sa.Column("rubric_version", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("done", sa.Integer(), nullable=False),
        sa.Column("changed", sa.Integer(), nullable=False),
        sa.Column("before", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("claimed_at", sa.DateTime(), nullable=True),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("regrade_jobs", schema=None) as batch_op:
        batch_op.create_index("ix_regrade_jobs_status", ["status", "id"], unique=False)
        batch_op.create_index("ix_regrade_jobs_exam", ["exam", "question_id", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("regrade_jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_regrade_jobs_exam")
        batch_op.drop_index("ix_regrade_jobs_status")
    op.drop_table("regrade_jobs")
    with op.batch_alter_table("rubric_versions", schema=None) as batch_op:
        batch_op.drop_index("ix_rubric_versions_exam")
    op.drop_table("rubric_versions")
