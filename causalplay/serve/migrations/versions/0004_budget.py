"""Each participant's test budget, so the export says whose stop was forced.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("participants") as b:
        b.add_column(sa.Column("max_tests", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("participants") as b:
        b.drop_column("max_tests")
