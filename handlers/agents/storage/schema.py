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
* ``webhook_subscriptions`` / ``webhook_deliveries``: signed webhook subscriptions of API keys
  and the events recorded for them (the outbox the delivery loop sends from).
* ``schedules`` / ``schedule_runs``: cron schedules of agents and workflows (``next_run_at``,
  moved by compare-and-set when a tick fires) and the ticks each one handled.
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
    "PRIORITY_STEP_SECONDS",
    "Execution",
    "ExecutionAttempt",
    "ExecutionFeedback",
    "ExecutionFile",
    "IdempotencyRecord",
    "LeasedRun",
    "Schedule",
    "ScheduleRun",
    "UtcDateTime",
    "WebhookDelivery",
    "WebhookSubscription",
    "Workflow",
    "WorkflowExecution",
    "WorkflowStepRecord",
    "WorkflowVersion",
    "queue_rank",
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
    workspace_sha256: Mapped[str | None] = mapped_column(String(64))
    """The current workspace's snapshot blob (``domain/snapshots.py``); NULL: not computed yet."""
    workspace_bytes: Mapped[int | None] = mapped_column(BigInteger)
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


PRIORITY_STEP_SECONDS = 10
"""What one priority level is worth in the queue: waiting this long (see ``queue_rank``)."""


def queue_rank(created_at: datetime, priority: int) -> int:
    """The queue position of an execution created at ``created_at`` with ``priority``:
    milliseconds since the epoch, less ``PRIORITY_STEP_SECONDS`` per priority level. Workers
    take the smallest rank first, so a higher priority goes ahead of lower ones submitted up
    to ``priority difference * PRIORITY_STEP_SECONDS`` earlier, and never further: an
    execution waits behind later ones of higher priority for a bounded time (no starvation).
    Equal priorities run in submission order."""
    return int(created_at.timestamp() * 1000) - priority * PRIORITY_STEP_SECONDS * 1000


def _default_rank(context: Any) -> int:
    values = context.get_current_parameters()
    return queue_rank(values["created_at"], values.get("priority") or 0)


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
    priority: Mapped[int] = mapped_column(Integer, default=0)
    queue_rank: Mapped[int] = mapped_column(BigInteger, default=_default_rank)
    """The queue's order (:func:`queue_rank` of ``created_at`` and ``priority`` unless set):
    workers take the smallest first."""
    not_before: Mapped[datetime | None]
    """A queued execution waits until then (a retry's backoff); NULL: at once."""


class Execution(LeasedRun, Base):
    """An agent execution (status, times and lease: :class:`LeasedRun`)."""

    __tablename__ = "executions"
    __table_args__ = (
        Index("ix_executions_agent_created", "agent_id", "created_at"),
        Index("ix_executions_agent_completed", "agent_id", "completed_at"),
        Index("ix_executions_agent_status", "agent_id", "status"),
        Index("ix_executions_agent_example", "agent_id", "example_name"),
        Index("ix_executions_agent_batch", "agent_id", "batch_id"),
        Index("ix_executions_status_created", "status", "created_at"),
        Index("ix_executions_queue", "status", "queue_rank"),  # the worker queue
        Index("ix_executions_concurrency", "concurrency_key", "status"),
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
    concurrency_key: Mapped[str | None] = mapped_column(String(300))
    """The manifest's concurrency key for this input (``<agent id>:<value>``); NULL: none."""
    concurrency_limit: Mapped[int | None] = mapped_column(Integer)


class ExecutionAttempt(Base):
    """One finished attempt of an agent execution (a retried one has several)."""

    __tablename__ = "execution_attempts"

    execution_id: Mapped[str] = mapped_column(
        ForeignKey("executions.id", ondelete="CASCADE"), primary_key=True
    )
    number: Mapped[int] = mapped_column(Integer, primary_key=True)
    worker_id: Mapped[str | None] = mapped_column(String(128))
    started_at: Mapped[datetime | None]
    ended_at: Mapped[datetime]
    outcome: Mapped[str] = mapped_column(String(16))  # completed | failed | timeout | worker_lost…
    error: Mapped[str | None] = mapped_column(Text)


class IdempotencyRecord(Base):
    """The answer to a request sent with an ``Idempotency-Key`` (per API key), kept 24 h+."""

    __tablename__ = "idempotency_records"
    __table_args__ = (Index("ix_idempotency_records_created", "created_at"),)

    key_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    idempotency_key: Mapped[str] = mapped_column(String(255), primary_key=True)
    operation: Mapped[str] = mapped_column(String(64))
    request_sha256: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int | None] = mapped_column(Integer)
    """NULL while the first request is being answered."""
    response: Mapped[Any | None]
    created_at: Mapped[datetime]


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
        Index("ix_workflow_executions_queue", "status", "queue_rank"),  # the worker queue
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


class WebhookSubscription(Base):
    """A webhook subscription (``wh_…``) of an API key: where to POST which execution events
    (``events``, filtered by ``agent_ids`` / ``workflow_ids``, empty: all), and the secret that
    signs them (kept because signing needs it; shown only when the subscription is created)."""

    __tablename__ = "webhook_subscriptions"
    __table_args__ = (Index("ix_webhook_subscriptions_key_created", "key_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    key_id: Mapped[str] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(String(2048))
    description: Mapped[str | None] = mapped_column(Text)
    events: Mapped[list[str]] = mapped_column(Json)
    agent_ids: Mapped[list[str]] = mapped_column(Json)
    workflow_ids: Mapped[list[str]] = mapped_column(Json)
    secret: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime]


class WebhookDelivery(Base):
    """One event for one subscription (``msg_…``, the ``webhook-id`` of every attempt): the
    exact body that is signed and sent, and the attempts' state. Recorded in the transaction
    that ended the execution (the outbox); ``pending`` rows are due at ``next_attempt_at``."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_webhook_created", "webhook_id", "created_at"),
        Index("ix_webhook_deliveries_status_next", "status", "next_attempt_at"),  # the outbox
        # one event per execution and subscription, however often its end is announced
        Index("uq_webhook_deliveries_execution_webhook", "execution_id", "webhook_id", unique=True),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    webhook_id: Mapped[str] = mapped_column(
        ForeignKey("webhook_subscriptions.id", ondelete="CASCADE")
    )
    event_type: Mapped[str] = mapped_column(String(64))
    execution_id: Mapped[str] = mapped_column(String(64))
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))  # pending | delivered | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None]
    last_attempt_at: Mapped[datetime | None]
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    delivered_at: Mapped[datetime | None]


# -- schedules -----------------------------------------------------------------------------------


class Schedule(Base):
    """A cron schedule of one agent or one workflow (``agent_id`` xor ``workflow_id``), owned
    by and run as the API key ``created_by_key``. ``next_run_at`` is the next tick (``NULL``
    while disabled): the scheduler moves it forward with a compare-and-set, which is what makes
    a tick start one run however many processes look (README.md, "Schedules")."""

    __tablename__ = "schedules"
    __table_args__ = (
        Index("ix_schedules_next_run_at", "next_run_at"),
        Index("ix_schedules_agent_created", "agent_id", "created_at"),
        Index("ix_schedules_workflow_created", "workflow_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    agent_id: Mapped[str | None] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    workflow_id: Mapped[str | None] = mapped_column(ForeignKey("workflows.id", ondelete="CASCADE"))
    version: Mapped[str | None] = mapped_column(String(64))
    """Workflows: the version reference each run resolves (``latest``, an id or a tag)."""
    cron: Mapped[str] = mapped_column(String(200))
    timezone: Mapped[str] = mapped_column(String(64))
    input: Mapped[dict[str, Any]]
    description: Mapped[str | None] = mapped_column(Text)
    enabled: Mapped[bool] = mapped_column(Boolean)
    created_by_key: Mapped[str] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"))
    next_run_at: Mapped[datetime | None]
    last_run_at: Mapped[datetime | None]
    """The tick of the latest run."""
    last_execution_id: Mapped[str | None] = mapped_column(String(64))
    last_error: Mapped[str | None] = mapped_column(Text)
    """Why the latest tick started no run (``NULL`` when it did)."""
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class ScheduleRun(Base):
    """One tick a schedule handled: the execution it started, or why it started none. The
    primary key makes a second run of one tick impossible, whatever the scheduler does."""

    __tablename__ = "schedule_runs"

    schedule_id: Mapped[str] = mapped_column(
        ForeignKey("schedules.id", ondelete="CASCADE"), primary_key=True
    )
    scheduled_for: Mapped[datetime] = mapped_column(primary_key=True)
    execution_id: Mapped[str | None] = mapped_column(String(64))
    """An agent (``aex_…``) or workflow (``wfx_…``) execution; ``NULL`` when skipped."""
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
