"""Recoverable sessions and study files: resume code, exported id, Prolific study/session ids, last activity.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

COLUMNS = (("resume_code", sa.String(16)), ("export_id", sa.String(128)), ("study_id", sa.String(64)),
           ("session_id", sa.String(64)), ("last_active_at", sa.Float()))


def upgrade() -> None:
    with op.batch_alter_table("participants") as b:
        for name, kind in COLUMNS:
            b.add_column(sa.Column(name, kind, nullable=True))
    # sessions started before this revision were last active, as far as anyone knows, when they consented
    op.execute("UPDATE participants SET last_active_at = consented_at")


def downgrade() -> None:
    with op.batch_alter_table("participants") as b:
        for name, _ in reversed(COLUMNS):
            b.drop_column(name)
