"""exam scorers: scorers refit from an exam's human scores, proposed and applied

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-10
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "exam_scorers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("exam", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("scorer", sa.Text(), nullable=False),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.Column("created_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("applied_at", sa.DateTime(), nullable=True),
        sa.Column("applied_by", sa.String(length=100), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("exam", "version", name="uq_exam_scorers_exam_version"),
    )
    with op.batch_alter_table("exam_scorers", schema=None) as batch_op:
        batch_op.create_index("ix_exam_scorers_exam_applied", ["exam", "applied_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("exam_scorers", schema=None) as batch_op:
        batch_op.drop_index("ix_exam_scorers_exam_applied")
    op.drop_table("exam_scorers")
