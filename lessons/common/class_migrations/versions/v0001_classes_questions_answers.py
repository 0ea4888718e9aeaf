"""Classes, the questions their students were asked, and their answers.

Revision ID: 0001
Revises:
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "classes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("code_digest", sa.String(64), nullable=False, unique=True),
        sa.Column("key_digest", sa.String(64), nullable=False),
        sa.Column("title", sa.String(120), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closes_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("classes_by_closing_time", "classes", ["closes_at"])
    op.create_table(
        "questions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("asked", sa.String(64), nullable=False),
        sa.Column("page", sa.String(64), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("question", sa.Text, nullable=False),
        sa.Column("options", sa.Text, nullable=False),
        sa.Column("decimals", sa.Integer, nullable=False),
        sa.Column("answer", sa.Text, nullable=False),
        sa.Column("first_asked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revealed_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("class_id", "asked", name="one_row_per_question"),
    )
    op.create_table(
        "answers",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("question_id", sa.Integer, sa.ForeignKey("questions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("student_digest", sa.String(64), nullable=False),
        sa.Column("response", sa.String(200), nullable=False),
        sa.Column("right", sa.Boolean, nullable=False),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("question_id", "student_digest", name="one_answer_per_student"),
    )
    op.create_index("answers_by_class_and_student", "answers", ["class_id", "student_digest"])


def downgrade() -> None:
    op.drop_table("answers")
    op.drop_table("questions")
    op.drop_index("classes_by_closing_time", "classes")
    op.drop_table("classes")
