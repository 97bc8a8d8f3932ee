"""Workflows: workflows, their released versions, executions and per-step records.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

UTC_TIME = sa.DateTime(timezone=True)


def _fk(column: str, table: str, referred: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{referred}.id"], name=f"fk_{table}_{column}_{referred}", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "workflows",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("slug", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("current_version_id", sa.String(64), nullable=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("updated_at", UTC_TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_workflows"),
        sa.UniqueConstraint("slug", name="uq_workflows_slug"),
    )
    op.create_index("ix_workflows_kind_slug", "workflows", ["kind", "slug"])
    op.create_table(
        "workflow_versions",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("workflow_id", sa.String(64), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("tag", sa.String(64), nullable=False),
        sa.Column("yaml_content", sa.Text(), nullable=False),
        sa.Column("definition", sa.JSON(), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("created_by_key", sa.String(32), nullable=True),
        _fk("workflow_id", "workflow_versions", "workflows"),
        sa.PrimaryKeyConstraint("id", name="pk_workflow_versions"),
    )
    op.create_index(
        "uq_workflow_versions_workflow_number",
        "workflow_versions",
        ["workflow_id", "number"],
        unique=True,
    )
    op.create_index(
        "uq_workflow_versions_workflow_tag",
        "workflow_versions",
        ["workflow_id", "tag"],
        unique=True,
    )
    op.create_table(
        "workflow_executions",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("workflow_id", sa.String(64), nullable=False),
        sa.Column("version_id", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("trigger_type", sa.String(16), nullable=True),
        sa.Column("input", sa.JSON(), nullable=True),
        sa.Column("overrides", sa.JSON(), nullable=True),
        sa.Column("example_id", sa.String(64), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("parent_execution_id", sa.String(64), nullable=True),
        sa.Column("parent_step_id", sa.String(128), nullable=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("started_at", UTC_TIME, nullable=True),
        sa.Column("completed_at", UTC_TIME, nullable=True),
        sa.Column("cancel_requested_at", UTC_TIME, nullable=True),
        sa.Column("duration_ms", sa.BigInteger(), nullable=True),
        sa.Column("created_by_key", sa.String(32), nullable=True),
        sa.Column("worker_id", sa.String(128), nullable=True),
        sa.Column("heartbeat_at", UTC_TIME, nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        _fk("workflow_id", "workflow_executions", "workflows"),
        _fk("version_id", "workflow_executions", "workflow_versions"),
        _fk("parent_execution_id", "workflow_executions", "workflow_executions"),
        sa.PrimaryKeyConstraint("id", name="pk_workflow_executions"),
    )
    for name, columns in (
        ("ix_workflow_executions_workflow_created", ["workflow_id", "created_at"]),
        ("ix_workflow_executions_workflow_status", ["workflow_id", "status"]),
        ("ix_workflow_executions_workflow_example", ["workflow_id", "example_id"]),
        ("ix_workflow_executions_status_created", ["status", "created_at"]),
        ("ix_workflow_executions_parent", ["parent_execution_id", "parent_step_id"]),
    ):
        op.create_index(name, "workflow_executions", columns)
    op.create_table(
        "workflow_step_records",
        sa.Column("execution_id", sa.String(64), nullable=False),
        sa.Column("step_id", sa.String(128), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("input", sa.JSON(), nullable=True),
        sa.Column("output", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("started_at", UTC_TIME, nullable=True),
        sa.Column("finished_at", UTC_TIME, nullable=True),
        _fk("execution_id", "workflow_step_records", "workflow_executions"),
        sa.PrimaryKeyConstraint("execution_id", "step_id", name="pk_workflow_step_records"),
    )


def downgrade() -> None:
    for table in ("workflow_step_records", "workflow_executions", "workflow_versions", "workflows"):
        op.drop_table(table)
