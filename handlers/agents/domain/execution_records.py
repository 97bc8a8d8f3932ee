"""Execution rows: creating one with its snapshot, recording its files, checking its input.

Used by the run operation (``runs.py``) and by workflows, whose agent steps are agent
executions (``workflows/invokers.py``).
"""

from __future__ import annotations

import ast
import contextlib
import secrets
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]
from referencing.exceptions import Unresolvable
from sqlalchemy import text
from sqlalchemy.orm import Session

from handlers.agents.domain.paths import safe_path
from handlers.agents.domain.snapshots import WORKSPACE, WORKSPACE_NAME, current_workspace
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.schema import Agent, Execution, ExecutionFile, utc_now
from webrest import BadRequest, HttpError

__all__ = [
    "QUEUE_CHANNEL",
    "add_execution_file",
    "create_execution_row",
    "input_problems",
    "new_execution_id",
    "notify_queued",
    "safe_name",
]

QUEUE_CHANNEL = "agents_queue"
"""PostgreSQL NOTIFY channel: executions were queued (every process's workers look for work)."""


def notify_queued(session: Session) -> None:
    """Wake the workers of every process when this transaction commits: it queued executions.
    For the queueing transactions without a dispatcher at hand (the engine's
    dispatcher notifies for the others, outside their transactions); workers also look on
    their own every second, so a missed notice only delays. PostgreSQL folds the notices of one
    transaction into one."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_notify(:channel, '')"), {"channel": QUEUE_CHANNEL})


def new_execution_id() -> str:
    """A fresh execution id (``aex_`` and 24 hex digits)."""
    return "aex_" + secrets.token_hex(12)


def safe_name(name: str) -> bool:
    """Whether ``name`` is a safe relative path (see :mod:`handlers.agents.domain.paths`)."""
    try:
        safe_path(name, ())
    except BadRequest:
        return False
    return True


def _required_loc(error: Any) -> list[str | int]:
    """The path of a ``required`` error, ending with the missing property."""
    path: list[str | int] = list(error.absolute_path)
    if error.validator == "required" and error.message.endswith(" is a required property"):
        with contextlib.suppress(ValueError, SyntaxError):
            path.append(ast.literal_eval(error.message.removesuffix(" is a required property")))
    return path


def input_problems(document: object, schema: object) -> list[tuple[list[str | int], str]]:
    """Why ``document`` misses ``schema``: (path, message) pairs, by path."""
    try:
        errors = list(Draft202012Validator(schema).iter_errors(document))
    except (SchemaError, Unresolvable) as error:
        raise HttpError(409, f"The agent's inputSchema cannot be used: {error}") from None
    problems = [(_required_loc(error), f"{error.json_path}: {error.message}") for error in errors]
    return sorted(problems, key=lambda problem: ([str(part) for part in problem[0]], problem[1]))


def create_execution_row(
    session: Session,
    blobs: BlobStore,
    agent: Agent,
    input_json: dict[str, Any],
    status: str,
    created_by_key: str | None,
    priority: int = 0,
) -> Execution:
    """A new execution row of ``agent`` with the snapshot of its manifest and workspace (the
    workspace document's blob is written first)."""
    digest, size = current_workspace(session, blobs, agent)
    execution = Execution(
        id=new_execution_id(),
        agent_id=agent.id,
        status=status,
        input=input_json,
        config_snapshot=agent.config,
        created_at=utc_now(),
        created_by_key=created_by_key,
        attempt=0,
        priority=priority,
    )
    session.add(execution)
    session.flush()
    add_execution_file(session, execution.id, WORKSPACE, WORKSPACE_NAME, digest, size,
                       "application/json")  # fmt: skip
    return execution


def add_execution_file(
    session: Session,
    execution_id: str,
    kind: str,
    name: str,
    digest: str,
    size: int,
    content_type: str | None,
) -> None:
    """Record one file (its content already a blob) of an execution."""
    session.add(
        ExecutionFile(
            execution_id=execution_id,
            kind=kind,
            name=name,
            blob_sha256=digest,
            size_bytes=size,
            content_type=content_type,
            created_at=utc_now(),
        )
    )
