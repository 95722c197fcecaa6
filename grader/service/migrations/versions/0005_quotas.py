"""quotas: fixed-window request counters, and queued submissions counted per platform

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rate_counters",
        sa.Column("bucket", sa.String(length=200), nullable=False),
        sa.Column("window_start", sa.BigInteger(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("bucket", "window_start"),
    )
    with op.batch_alter_table("rate_counters", schema=None) as batch_op:
        batch_op.create_index("ix_rate_counters_window", ["window_start"], unique=False)
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_submissions_platform_status", ["platform_id", "status"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_index("ix_submissions_platform_status")
    with op.batch_alter_table("rate_counters", schema=None) as batch_op:
        batch_op.drop_index("ix_rate_counters_window")
    op.drop_table("rate_counters")
