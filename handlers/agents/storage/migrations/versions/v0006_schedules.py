"""Schedules: cron schedules of agents and workflows.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

from __future__ import annotations

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Filled in by the change that introduces these tables (placeholder keeps the chain)."""


def downgrade() -> None:
    """See upgrade."""
