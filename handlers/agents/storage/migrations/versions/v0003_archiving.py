"""Archiving: ``archived_at`` on agents and workflows (``NULL`` while active).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

UTC_TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("agents") as table:
        table.add_column(sa.Column("archived_at", UTC_TIME, nullable=True))
    with op.batch_alter_table("workflows") as table:
        table.add_column(sa.Column("archived_at", UTC_TIME, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("workflows") as table:
        table.drop_column("archived_at")
    with op.batch_alter_table("agents") as table:
        table.drop_column("archived_at")
