"""The Alembic migrations: they create exactly the schema the models describe, and go back."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from handlers.agents.storage.database import Database
from handlers.agents.storage.migrate import current_revision, downgrade, head_revision, upgrade
from handlers.agents.storage.schema import Base
from tests.agents.support import Storage

TABLES = {
    "api_keys",
    "api_key_grants",
    "agents",
    "agent_files",
    "executions",
    "execution_attempts",
    "execution_files",
    "execution_feedback",
    "dataset_examples",
    "workflows",
    "workflow_versions",
    "workflow_executions",
    "workflow_step_records",
    "webhook_subscriptions",
    "webhook_deliveries",
    "schedules",
    "schedule_runs",
    "idempotency_records",
}
INDEXES = {
    "agents": {"ix_agents_created_at_id"},
    "executions": {
        "ix_executions_agent_created",
        "ix_executions_agent_completed",
        "ix_executions_agent_status",
        "ix_executions_agent_example",
        "ix_executions_agent_batch",
        "ix_executions_status_created",
        "ix_executions_queue",
        "ix_executions_concurrency",
    },
    "execution_feedback": {
        "ix_execution_feedback_agent_status",
        "ix_execution_feedback_agent_rating",
        "ix_execution_feedback_agent_resolved",
        "ix_execution_feedback_agent_promoted",
    },
    "dataset_examples": {"ix_dataset_examples_agent_created"},
    "workflows": {"ix_workflows_kind_slug"},
    "workflow_versions": {
        "uq_workflow_versions_workflow_number",
        "uq_workflow_versions_workflow_tag",
    },
    "workflow_executions": {
        "ix_workflow_executions_workflow_created",
        "ix_workflow_executions_workflow_status",
        "ix_workflow_executions_workflow_example",
        "ix_workflow_executions_status_created",
        "ix_workflow_executions_queue",
        "ix_workflow_executions_parent",
    },
    "webhook_subscriptions": {"ix_webhook_subscriptions_key_created"},
    "webhook_deliveries": {
        "ix_webhook_deliveries_webhook_created",
        "ix_webhook_deliveries_status_next",
        "uq_webhook_deliveries_execution_webhook",
    },
    "idempotency_records": {"ix_idempotency_records_created"},
    "schedules": {
        "ix_schedules_next_run_at",
        "ix_schedules_agent_created",
        "ix_schedules_workflow_created",
    },
}


@pytest.fixture
def database(new_storage: Callable[[], Storage]) -> Iterator[Database]:
    database = Database(new_storage().database_url)
    yield database
    database.dispose()


def _tables(database: Database) -> set[str]:
    with database.engine.connect() as connection:
        return set(sa.inspect(connection).get_table_names())


def test_upgrade_on_an_empty_database_creates_every_table_and_index(database: Database) -> None:
    assert current_revision(database) is None
    upgrade(database)

    assert current_revision(database) == head_revision()
    assert _tables(database) == TABLES | {"alembic_version"}
    with database.engine.connect() as connection:
        inspector = sa.inspect(connection)
        for table, expected in INDEXES.items():
            indexes = inspector.get_indexes(table)
            # PostgreSQL also lists the index behind a unique constraint
            names = {ix["name"] for ix in indexes if not ix.get("duplicates_constraint")}
            assert names == expected
        assert {c["name"] for c in inspector.get_unique_constraints("agents")} == {"uq_agents_slug"}


def test_the_migrated_schema_matches_the_models(database: Database) -> None:
    upgrade(database)
    with database.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []


def test_downgrade_to_base_removes_everything_and_upgrade_again_works(database: Database) -> None:
    upgrade(database)
    downgrade(database, "base")
    assert current_revision(database) is None
    assert _tables(database) <= {"alembic_version"}

    upgrade(database)
    upgrade(database)  # already at head: nothing to do
    assert _tables(database) == TABLES | {"alembic_version"}


def test_foreign_keys_are_enforced(database: Database) -> None:
    upgrade(database)
    statement = sa.text(
        "INSERT INTO agent_files (agent_id, path, blob_sha256, size_bytes, updated_at) "
        "VALUES ('agt_missing', 'a.txt', :hash, 1, CURRENT_TIMESTAMP)"
    )
    with pytest.raises(sa.exc.IntegrityError):
        database.write_sync(lambda session: session.execute(statement, {"hash": "0" * 64}))
