"""The queue: priorities, retry schedules, concurrency keys, attempts; idempotency records.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""

from __future__ import annotations

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Filled in by the change that introduces these tables (placeholder keeps the chain)."""


def downgrade() -> None:
    """See upgrade."""
