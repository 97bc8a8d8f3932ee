"""Schedules: cron schedules of agents and workflows, and the ticks they handled.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

UTC_TIME = sa.DateTime(timezone=True)


def _fk(column: str, table: str, referred: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{referred}.id"], name=f"fk_{table}_{column}_{referred}", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("agent_id", sa.String(64), nullable=True),
        sa.Column("workflow_id", sa.String(64), nullable=True),
        sa.Column("version", sa.String(64), nullable=True),
        sa.Column("cron", sa.String(200), nullable=False),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("input", sa.JSON(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_by_key", sa.String(32), nullable=False),
        sa.Column("next_run_at", UTC_TIME, nullable=True),
        sa.Column("last_run_at", UTC_TIME, nullable=True),
        sa.Column("last_execution_id", sa.String(64), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("updated_at", UTC_TIME, nullable=False),
        _fk("agent_id", "schedules", "agents"),
        _fk("workflow_id", "schedules", "workflows"),
        _fk("created_by_key", "schedules", "api_keys"),
        sa.PrimaryKeyConstraint("id", name="pk_schedules"),
    )
    op.create_index("ix_schedules_next_run_at", "schedules", ["next_run_at"])
    op.create_index("ix_schedules_agent_created", "schedules", ["agent_id", "created_at"])
    op.create_index("ix_schedules_workflow_created", "schedules", ["workflow_id", "created_at"])
    op.create_table(
        "schedule_runs",
        sa.Column("schedule_id", sa.String(64), nullable=False),
        sa.Column("scheduled_for", UTC_TIME, nullable=False),
        sa.Column("execution_id", sa.String(64), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
        _fk("schedule_id", "schedule_runs", "schedules"),
        sa.PrimaryKeyConstraint("schedule_id", "scheduled_for", name="pk_schedule_runs"),
    )


def downgrade() -> None:
    op.drop_table("schedule_runs")
    op.drop_index("ix_schedules_workflow_created", table_name="schedules")
    op.drop_index("ix_schedules_agent_created", table_name="schedules")
    op.drop_index("ix_schedules_next_run_at", table_name="schedules")
    op.drop_table("schedules")
