"""The queue: priorities (``priority``, ``queue_rank``), retry backoff (``not_before``),
concurrency keys, the attempts of retried executions, idempotency records, and the workspace
snapshot kept on the agent (a run records it without reading the file list).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

UTC_TIME = sa.DateTime(timezone=True)
QUEUED_TABLES = ("executions", "workflow_executions")


def _epoch_ms(dialect: str) -> str:
    """SQL of ``created_at`` in milliseconds since the epoch (the rank of priority 0)."""
    if dialect == "postgresql":
        return "CAST(EXTRACT(EPOCH FROM created_at) * 1000 AS BIGINT)"
    return "CAST((julianday(created_at) - 2440587.5) * 86400000 AS INTEGER)"


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    with op.batch_alter_table("agents") as table:
        table.add_column(sa.Column("workspace_sha256", sa.String(64), nullable=True))
        table.add_column(sa.Column("workspace_bytes", sa.BigInteger(), nullable=True))
    for name in QUEUED_TABLES:
        with op.batch_alter_table(name) as table:
            table.add_column(
                sa.Column("priority", sa.Integer(), nullable=False, server_default="0")
            )
            table.add_column(
                sa.Column("queue_rank", sa.BigInteger(), nullable=False, server_default="0")
            )
            table.add_column(sa.Column("not_before", UTC_TIME, nullable=True))
        op.execute(f"UPDATE {name} SET queue_rank = {_epoch_ms(dialect)}")
        op.create_index(f"ix_{name}_queue", name, ["status", "queue_rank"])
    with op.batch_alter_table("executions") as table:
        table.add_column(sa.Column("concurrency_key", sa.String(300), nullable=True))
        table.add_column(sa.Column("concurrency_limit", sa.Integer(), nullable=True))
    op.create_index("ix_executions_concurrency", "executions", ["concurrency_key", "status"])
    op.create_table(
        "execution_attempts",
        sa.Column("execution_id", sa.String(64), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("worker_id", sa.String(128), nullable=True),
        sa.Column("started_at", UTC_TIME, nullable=True),
        sa.Column("ended_at", UTC_TIME, nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["execution_id"],
            ["executions.id"],
            name="fk_execution_attempts_execution_id_executions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("execution_id", "number", name="pk_execution_attempts"),
    )
    op.create_table(
        "idempotency_records",
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("idempotency_key", sa.String(255), nullable=False),
        sa.Column("operation", sa.String(64), nullable=False),
        sa.Column("request_sha256", sa.String(64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("response", sa.JSON(), nullable=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.PrimaryKeyConstraint("key_id", "idempotency_key", name="pk_idempotency_records"),
    )
    op.create_index("ix_idempotency_records_created", "idempotency_records", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_idempotency_records_created", table_name="idempotency_records")
    op.drop_table("idempotency_records")
    op.drop_table("execution_attempts")
    op.drop_index("ix_executions_concurrency", table_name="executions")
    with op.batch_alter_table("executions") as table:
        table.drop_column("concurrency_limit")
        table.drop_column("concurrency_key")
    for name in QUEUED_TABLES:
        op.drop_index(f"ix_{name}_queue", table_name=name)
        with op.batch_alter_table(name) as table:
            table.drop_column("not_before")
            table.drop_column("queue_rank")
            table.drop_column("priority")
    with op.batch_alter_table("agents") as table:
        table.drop_column("workspace_bytes")
        table.drop_column("workspace_sha256")
