"""Initial schema: participants, tests, events.

Revision ID: 0001
Revises:
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "participants",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("code", sa.String(128), nullable=False),
        sa.Column("code_source", sa.String(16), nullable=False),
        sa.Column("session_token", sa.String(64), nullable=False),
        sa.Column("task", sa.String(64), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("condition", sa.Integer(), nullable=False),
        sa.Column("design_seed", sa.Integer(), nullable=False),
        sa.Column("episode_seed", sa.Integer(), nullable=False),
        sa.Column("n_objects", sa.Integer(), nullable=False),
        sa.Column("rule", sa.String(32), nullable=False),
        sa.Column("true_blickets", sa.String(64), nullable=False),
        sa.Column("stage", sa.String(16), nullable=False),
        sa.Column("check_attempts", sa.Integer(), nullable=False),
        sa.Column("n_tests", sa.Integer(), nullable=False),
        sa.Column("consented_at", sa.Float(), nullable=False),
        sa.Column("task_started_at", sa.Float(), nullable=True),
        sa.Column("finished_at", sa.Float(), nullable=True),
        sa.Column("judged_blickets", sa.String(64), nullable=True),
        sa.Column("rule_choice", sa.String(32), nullable=True),
        sa.UniqueConstraint("code"),
        sa.UniqueConstraint("session_token"),
        sa.UniqueConstraint("task", "slot", name="uq_participants_task_slot"),
    )
    op.create_table(
        "tests",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("participant_id", sa.Integer(), sa.ForeignKey("participants.id"), nullable=False),
        sa.Column("test", sa.Integer(), nullable=False),
        sa.Column("objects_on", sa.String(64), nullable=False),
        sa.Column("lit", sa.Boolean(), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.UniqueConstraint("participant_id", "test", name="uq_tests_participant_test"),
    )
    op.create_index("ix_tests_participant_id", "tests", ["participant_id"])
    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("participant_id", sa.Integer(), sa.ForeignKey("participants.id"), nullable=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
    )
    op.create_index("ix_events_participant_id", "events", ["participant_id"])


def downgrade() -> None:
    op.drop_index("ix_events_participant_id", table_name="events")
    op.drop_table("events")
    op.drop_index("ix_tests_participant_id", table_name="tests")
    op.drop_table("tests")
    op.drop_table("participants")
