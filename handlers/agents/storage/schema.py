"""The tables of the agents service (SQLAlchemy typed declarative models).

The database schema is created and changed only by the Alembic migrations in
``handlers/agents/storage/migrations``; these models describe it for queries (a test checks that the
migrations and the models agree). Times are stored in UTC.

* ``api_keys`` / ``api_key_grants``: bearer keys (only the SHA-256 of the secret is kept) and
  the agents and workflows a scoped key may use.
* ``agents`` / ``agent_files``: agents and their live workspace files (contents in the blob
  store, by hash).
* ``executions``: agent executions (status, times, input snapshot, output, worker lease),
  with ``execution_files`` (input, output, issues, trace and expected files) and
  ``execution_feedback`` (feedback body, rating, triage status; the expected JSON is on the
  execution).
* ``dataset_examples``: executions promoted to an agent's dataset.
* ``workflows`` / ``workflow_versions``: workflows and their released, immutable versions
  (YAML and the parsed definition); ``workflow_executions`` (status, inputs snapshot, result,
  worker lease like agent executions) with ``workflow_step_records`` (one row per step: the
  journal a resumed execution starts from).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "Agent",
    "AgentFile",
    "ApiKey",
    "ApiKeyGrant",
    "Base",
    "DatasetExample",
    "Execution",
    "ExecutionFeedback",
    "ExecutionFile",
    "LeasedRun",
    "UtcDateTime",
    "Workflow",
    "WorkflowExecution",
    "WorkflowStepRecord",
    "WorkflowVersion",
    "utc_now",
]

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


class UtcDateTime(TypeDecorator[datetime]):
    """A timestamp stored as UTC and read back timezone-aware (SQLite keeps no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# JSON columns store Python None as SQL NULL, so "IS NULL" means "absent".
Json = JSON(none_as_null=True)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UtcDateTime(),
        dict[str, Any]: Json,
        Any: Json,
    }


class ApiKey(Base):
    """A bearer key: ``sk_<id>_<secret>``; only the secret's SHA-256 is stored."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    secret_sha256: Mapped[str] = mapped_column(String(64))
    scope_all: Mapped[bool] = mapped_column(Boolean, default=False)
    can_create_agents: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]


class ApiKeyGrant(Base):
    """One agent or workflow (by id or slug) a scoped key may use."""

    __tablename__ = "api_key_grants"

    key_id: Mapped[str] = mapped_column(
        ForeignKey("api_keys.id", ondelete="CASCADE"), primary_key=True
    )
    resource_kind: Mapped[str] = mapped_column(String(16), primary_key=True)  # agent | workflow
    ref: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime]


class Archivable:
    """What agents and workflows share: ``archived_at`` (``NULL`` while active) and
    ``updated_at``."""

    archived_at: Mapped[datetime | None]
    updated_at: Mapped[datetime]

    def set_archived(self, archived: bool) -> None:
        """Archive (stamping the time) or restore; a no-op when already so."""
        if archived != (self.archived_at is not None):
            now = utc_now()
            self.archived_at = now if archived else None
            self.updated_at = now


class Agent(Archivable, Base):
    """An agent: its manifest (``config``) and, through ``agent_files``, its workspace."""

    __tablename__ = "agents"
    __table_args__ = (Index("ix_agents_created_at_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    config: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]


class AgentFile(Base):
    """One live file of an agent's workspace."""

    __tablename__ = "agent_files"

    agent_id: Mapped[str] = mapped_column(
        ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
    )
    path: Mapped[str] = mapped_column(String(512), primary_key=True)
    blob_sha256: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    content_type: Mapped[str | None] = mapped_column(String(255))
    updated_at: Mapped[datetime]


class LeasedRun:
    """What agent and workflow executions share: ``status`` (an ``ExecutionStatus``), the error,
    the times, and the lease of the worker running one (``worker_id``, ``heartbeat_at``,
    ``attempt``) that :mod:`handlers.agents.execution.leases` manages for both."""

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    completed_at: Mapped[datetime | None]
    cancel_requested_at: Mapped[datetime | None]
    duration_ms: Mapped[int | None] = mapped_column(BigInteger)
    created_by_key: Mapped[str | None] = mapped_column(String(32))
    worker_id: Mapped[str | None] = mapped_column(String(128))
    heartbeat_at: Mapped[datetime | None]
    attempt: Mapped[int] = mapped_column(Integer, default=0)


class Execution(LeasedRun, Base):
    """An agent execution (status, times and lease: :class:`LeasedRun`)."""

    __tablename__ = "executions"
    __table_args__ = (
        Index("ix_executions_agent_created", "agent_id", "created_at"),
        Index("ix_executions_agent_completed", "agent_id", "completed_at"),
        Index("ix_executions_agent_status", "agent_id", "status"),
        Index("ix_executions_agent_example", "agent_id", "example_name"),
        Index("ix_executions_agent_batch", "agent_id", "batch_id"),
        Index("ix_executions_status_created", "status", "created_at"),  # the worker queue
    )

    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    batch_id: Mapped[str | None] = mapped_column(String(64))
    example_name: Mapped[str | None] = mapped_column(String(200))
    source_execution_id: Mapped[str | None] = mapped_column(
        ForeignKey("executions.id", ondelete="SET NULL")
    )
    input: Mapped[dict[str, Any] | None]
    """The input snapshot a rerun uses (file inputs are ``execution_files`` of kind input)."""
    run_metadata: Mapped[dict[str, Any] | None] = mapped_column("metadata", Json)
    config_snapshot: Mapped[dict[str, Any] | None]
    """The agent's manifest when the execution was created."""
    output: Mapped[Any | None]
    schema_valid: Mapped[bool | None] = mapped_column(Boolean)
    expected: Mapped[Any | None]
    """The expected JSON (``None``: none)."""


class ExecutionFile(Base):
    """A file of an execution: ``kind`` is input, output, issues, trace or expected."""

    __tablename__ = "execution_files"

    execution_id: Mapped[str] = mapped_column(
        ForeignKey("executions.id", ondelete="CASCADE"), primary_key=True
    )
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    blob_sha256: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    content_type: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime]


class ExecutionFeedback(Base):
    """Feedback on one execution (``agent_id`` repeated so the list filters use an index)."""

    __tablename__ = "execution_feedback"
    __table_args__ = (
        Index("ix_execution_feedback_agent_status", "agent_id", "status"),
        Index("ix_execution_feedback_agent_rating", "agent_id", "rating"),
        Index("ix_execution_feedback_agent_resolved", "agent_id", "resolved_at"),
        Index("ix_execution_feedback_agent_promoted", "agent_id", "promoted_example_name"),
    )

    execution_id: Mapped[str] = mapped_column(
        ForeignKey("executions.id", ondelete="CASCADE"), primary_key=True
    )
    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    body: Mapped[str] = mapped_column(Text)
    rating: Mapped[str | None] = mapped_column(String(16))  # pass | fail | partial
    status: Mapped[str | None] = mapped_column(String(16))  # open | resolved | ignored
    created_at: Mapped[datetime]
    created_by: Mapped[str | None] = mapped_column(String(128))
    updated_at: Mapped[datetime]
    resolved_at: Mapped[datetime | None]
    resolved_by: Mapped[str | None] = mapped_column(String(128))
    promoted_example_name: Mapped[str | None] = mapped_column(String(200))


class DatasetExample(Base):
    """A dataset example of an agent (an execution promoted to an example)."""

    __tablename__ = "dataset_examples"
    __table_args__ = (Index("ix_dataset_examples_agent_created", "agent_id", "created_at"),)

    agent_id: Mapped[str] = mapped_column(
        ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    source_execution_id: Mapped[str | None] = mapped_column(
        ForeignKey("executions.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime]


class Workflow(Archivable, Base):
    """A workflow (or block); its versions are in ``workflow_versions``. ``name``,
    ``description`` and ``kind`` follow the current (newest) version."""

    __tablename__ = "workflows"
    __table_args__ = (Index("ix_workflows_kind_slug", "kind", "slug"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str | None] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(16))  # workflow | block
    description: Mapped[str | None] = mapped_column(Text)
    current_version_id: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime]


class WorkflowVersion(Base):
    """A released version: never changed once written."""

    __tablename__ = "workflow_versions"
    __table_args__ = (
        Index("uq_workflow_versions_workflow_number", "workflow_id", "number", unique=True),
        Index("uq_workflow_versions_workflow_tag", "workflow_id", "tag", unique=True),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    workflow_id: Mapped[str] = mapped_column(ForeignKey("workflows.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    tag: Mapped[str] = mapped_column(String(64))
    yaml_content: Mapped[str] = mapped_column(Text)
    definition: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]
    created_by_key: Mapped[str | None] = mapped_column(String(32))


class WorkflowExecution(LeasedRun, Base):
    """A workflow execution (status, times and lease: :class:`LeasedRun`); a block run as a
    step is a child execution (``parent_execution_id``, ``parent_step_id``) run inline by its
    parent's worker."""

    __tablename__ = "workflow_executions"
    __table_args__ = (
        Index("ix_workflow_executions_workflow_created", "workflow_id", "created_at"),
        Index("ix_workflow_executions_workflow_status", "workflow_id", "status"),
        Index("ix_workflow_executions_workflow_example", "workflow_id", "example_id"),
        Index("ix_workflow_executions_status_created", "status", "created_at"),
        Index("ix_workflow_executions_parent", "parent_execution_id", "parent_step_id"),
    )

    workflow_id: Mapped[str] = mapped_column(ForeignKey("workflows.id", ondelete="CASCADE"))
    version_id: Mapped[str] = mapped_column(ForeignKey("workflow_versions.id", ondelete="CASCADE"))
    trigger_type: Mapped[str | None] = mapped_column(String(16))
    input: Mapped[dict[str, Any] | None]
    """The inputs snapshot (a file input is ``{name, size, contentType, sha256}``, its
    content a blob)."""
    overrides: Mapped[dict[str, Any] | None]
    example_id: Mapped[str | None] = mapped_column(String(64))
    result: Mapped[Any | None]
    parent_execution_id: Mapped[str | None] = mapped_column(
        ForeignKey("workflow_executions.id", ondelete="CASCADE")
    )
    parent_step_id: Mapped[str | None] = mapped_column(String(128))


class WorkflowStepRecord(Base):
    """The latest record of one step of a workflow execution (the engine's journal)."""

    __tablename__ = "workflow_step_records"

    execution_id: Mapped[str] = mapped_column(
        ForeignKey("workflow_executions.id", ondelete="CASCADE"), primary_key=True
    )
    step_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    """The step's index in the definition (steps are listed in this order)."""
    status: Mapped[str] = mapped_column(String(16))
    input: Mapped[Any | None]
    output: Mapped[Any | None]
    error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]


# -- webhooks ------------------------------------------------------------------------------------


# -- schedules -----------------------------------------------------------------------------------
