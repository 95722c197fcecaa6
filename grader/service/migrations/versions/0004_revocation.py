"""sessions that end: instructors' session generation, removed instructors and platforms

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("instructors", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("session_generation", sa.Integer(), nullable=False, server_default="0")
        )
        batch_op.add_column(sa.Column("removed_at", sa.DateTime(), nullable=True))
    with op.batch_alter_table("platforms", schema=None) as batch_op:
        batch_op.add_column(sa.Column("removed_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("platforms", schema=None) as batch_op:
        batch_op.drop_column("removed_at")
    with op.batch_alter_table("instructors", schema=None) as batch_op:
        batch_op.drop_column("removed_at")
        batch_op.drop_column("session_generation")
