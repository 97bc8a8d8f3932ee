"""Alembic environment: runs the migrations on the connection that
``handlers.agents.storage.migrate`` gives (``config.attributes["connection"]``) in one
transaction. On PostgreSQL a transaction-level advisory lock serializes servers that start at
the same time; on SQLite the write transaction (``BEGIN IMMEDIATE``) does."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, text

from handlers.agents.storage.schema import Base

MIGRATION_LOCK_ID = 7_202_405_001  # any constant shared by every server of this database


def run_migrations(connection: Connection) -> None:
    """Apply the requested migrations on ``connection``."""
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": MIGRATION_LOCK_ID})
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported: run them on a database")
given = context.config.attributes.get("connection")
if given is None:
    raise SystemExit(
        "run migrations with handlers.agents.storage.migrate, which passes a connection"
    )
run_migrations(given)
