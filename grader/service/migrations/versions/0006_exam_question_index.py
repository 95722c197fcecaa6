"""submissions by exam and question: the instructor pages count and page answers in SQL

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_submissions_exam_question", ["exam", "question_id", "id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_index("ix_submissions_exam_question")
