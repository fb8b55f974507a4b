"""Adaptive studies: the design chosen for each participant, and the sequential-ADO state per task.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("participants") as b:
        b.add_column(sa.Column("design", sa.Text(), nullable=True))
    op.create_table(
        "ado_states",
        sa.Column("task", sa.String(64), primary_key=True),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("n_participants", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ado_states")
    with op.batch_alter_table("participants") as b:
        b.drop_column("design")
