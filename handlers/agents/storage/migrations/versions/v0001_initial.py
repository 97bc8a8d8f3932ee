"""The agents schema: API keys, agents and their files, executions, feedback, datasets.

Revision ID: 0001
Revises:
Create Date: 2026-05-20
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

UTC_TIME = sa.DateTime(timezone=True)


def _fk(column: str, table: str, referred: str, ondelete: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{referred}.id"], name=f"fk_{table}_{column}_{referred}", ondelete=ondelete
    )


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("secret_sha256", sa.String(64), nullable=False),
        sa.Column("scope_all", sa.Boolean(), nullable=False),
        sa.Column("can_create_agents", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("revoked_at", UTC_TIME, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_keys"),
    )
    op.create_table(
        "api_key_grants",
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("resource_kind", sa.String(16), nullable=False),
        sa.Column("ref", sa.String(64), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        _fk("key_id", "api_key_grants", "api_keys", "CASCADE"),
        sa.PrimaryKeyConstraint("key_id", "resource_kind", "ref", name="pk_api_key_grants"),
    )
    op.create_table(
        "agents",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("slug", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("updated_at", UTC_TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_agents"),
        sa.UniqueConstraint("slug", name="uq_agents_slug"),
    )
    op.create_index("ix_agents_created_at_id", "agents", ["created_at", "id"])
    op.create_table(
        "agent_files",
        sa.Column("agent_id", sa.String(64), nullable=False),
        sa.Column("path", sa.String(512), nullable=False),
        sa.Column("blob_sha256", sa.String(64), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("content_type", sa.String(255), nullable=True),
        sa.Column("updated_at", UTC_TIME, nullable=False),
        _fk("agent_id", "agent_files", "agents", "CASCADE"),
        sa.PrimaryKeyConstraint("agent_id", "path", name="pk_agent_files"),
    )
    op.create_table(
        "executions",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("agent_id", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("batch_id", sa.String(64), nullable=True),
        sa.Column("example_name", sa.String(200), nullable=True),
        sa.Column("source_execution_id", sa.String(64), nullable=True),
        sa.Column("input", sa.JSON(), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=True),
        sa.Column("config_snapshot", sa.JSON(), nullable=True),
        sa.Column("output", sa.JSON(), nullable=True),
        sa.Column("schema_valid", sa.Boolean(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("expected", sa.JSON(), nullable=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("started_at", UTC_TIME, nullable=True),
        sa.Column("completed_at", UTC_TIME, nullable=True),
        sa.Column("cancel_requested_at", UTC_TIME, nullable=True),
        sa.Column("duration_ms", sa.BigInteger(), nullable=True),
        sa.Column("created_by_key", sa.String(32), nullable=True),
        sa.Column("worker_id", sa.String(128), nullable=True),
        sa.Column("heartbeat_at", UTC_TIME, nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        _fk("agent_id", "executions", "agents", "CASCADE"),
        _fk("source_execution_id", "executions", "executions", "SET NULL"),
        sa.PrimaryKeyConstraint("id", name="pk_executions"),
    )
    for name, columns in (
        ("ix_executions_agent_created", ["agent_id", "created_at"]),
        ("ix_executions_agent_completed", ["agent_id", "completed_at"]),
        ("ix_executions_agent_status", ["agent_id", "status"]),
        ("ix_executions_agent_example", ["agent_id", "example_name"]),
        ("ix_executions_agent_batch", ["agent_id", "batch_id"]),
        ("ix_executions_status_created", ["status", "created_at"]),
    ):
        op.create_index(name, "executions", columns)
    op.create_table(
        "execution_files",
        sa.Column("execution_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("blob_sha256", sa.String(64), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("content_type", sa.String(255), nullable=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
        _fk("execution_id", "execution_files", "executions", "CASCADE"),
        sa.PrimaryKeyConstraint("execution_id", "kind", "name", name="pk_execution_files"),
    )
    op.create_table(
        "execution_feedback",
        sa.Column("execution_id", sa.String(64), nullable=False),
        sa.Column("agent_id", sa.String(64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("rating", sa.String(16), nullable=True),
        sa.Column("status", sa.String(16), nullable=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("created_by", sa.String(128), nullable=True),
        sa.Column("updated_at", UTC_TIME, nullable=False),
        sa.Column("resolved_at", UTC_TIME, nullable=True),
        sa.Column("resolved_by", sa.String(128), nullable=True),
        sa.Column("promoted_example_name", sa.String(200), nullable=True),
        _fk("execution_id", "execution_feedback", "executions", "CASCADE"),
        _fk("agent_id", "execution_feedback", "agents", "CASCADE"),
        sa.PrimaryKeyConstraint("execution_id", name="pk_execution_feedback"),
    )
    for name, columns in (
        ("ix_execution_feedback_agent_status", ["agent_id", "status"]),
        ("ix_execution_feedback_agent_rating", ["agent_id", "rating"]),
        ("ix_execution_feedback_agent_resolved", ["agent_id", "resolved_at"]),
        ("ix_execution_feedback_agent_promoted", ["agent_id", "promoted_example_name"]),
    ):
        op.create_index(name, "execution_feedback", columns)
    op.create_table(
        "dataset_examples",
        sa.Column("agent_id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("source_execution_id", sa.String(64), nullable=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
        _fk("agent_id", "dataset_examples", "agents", "CASCADE"),
        _fk("source_execution_id", "dataset_examples", "executions", "SET NULL"),
        sa.PrimaryKeyConstraint("agent_id", "name", name="pk_dataset_examples"),
    )
    op.create_index(
        "ix_dataset_examples_agent_created", "dataset_examples", ["agent_id", "created_at"]
    )


def downgrade() -> None:
    for table in (
        "dataset_examples",
        "execution_feedback",
        "execution_files",
        "executions",
        "agent_files",
        "agents",
        "api_key_grants",
        "api_keys",
    ):
        op.drop_table(table)
