"""Agent executions as the API shows them: get (with ``include``), cancel, file downloads.

An execution of an agent outside the key's scope answers 404 like an unknown one. ``include``
adds parts that are ``null`` otherwise: ``feedback``, ``expected`` (expected JSON and files)
and ``files`` (input and output files, whether ``issues.md`` and ``trace.jsonl`` exist); for a
page of executions each part is one query, whatever the page size.

Cancel, by the execution's status (idempotent):

* ``created``, ``pending`` -> ``cancelled``: the execution is ``cancelled`` at once (error
  "Cancelled before it started");
* ``running``, ``waiting``, ``finalizing`` -> ``cancellation-requested``: ``cancelRequestedAt``
  is recorded; the worker stops the program at its next poll (at once when it runs in this
  process) and the execution ends ``cancelled`` (a program already finished keeps its result);
* terminal -> ``already-terminal``: nothing changes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import anyio
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from generated.agents import models
from handlers.agents.domain.feedback import EXPECTED, feedback_entry, find_execution
from handlers.agents.domain.keys import Principal
from handlers.agents.domain.snapshots import INPUT, ISSUES, ISSUES_NAME, OUTPUT, TRACE, TRACE_NAME
from handlers.agents.execution.engine import ExecutionEngine
from handlers.agents.execution.leases import ACTIVE, QUEUED, cancel
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import (
    Execution,
    ExecutionAttempt,
    ExecutionFeedback,
    ExecutionFile,
    utc_now,
)
from webrest import HttpError, Response

__all__ = ["ExecutionQueries", "FileKind", "Include", "summaries"]

Include = Literal["feedback", "expected", "files", "attempts"]
FileKind = Literal["input", "output", "issues", "trace"]

OCTET_STREAM = "application/octet-stream"
_FIXED_NAMES = {ISSUES: ISSUES_NAME, TRACE: TRACE_NAME}


@dataclass
class _Parts:
    feedback: ExecutionFeedback | None = None
    expected_files: list[models.ExpectedFile] = field(default_factory=list)
    inputs: list[models.ExecutionFile] = field(default_factory=list)
    outputs: list[models.ExecutionFile] = field(default_factory=list)
    has_issues: bool = False
    has_trace: bool = False
    attempts: list[models.ExecutionAttempt] = field(default_factory=list)


def _load_parts(
    session: Session, ids: Sequence[str], include: Collection[Include]
) -> dict[str, _Parts]:
    parts: defaultdict[str, _Parts] = defaultdict(_Parts)
    if not ids or not include:
        return parts
    if "attempts" in include:
        for attempt in session.scalars(
            select(ExecutionAttempt)
            .where(ExecutionAttempt.execution_id.in_(ids))
            .order_by(ExecutionAttempt.execution_id, ExecutionAttempt.number)
        ):
            parts[attempt.execution_id].attempts.append(
                models.ExecutionAttempt(
                    number=attempt.number,
                    worker_id=attempt.worker_id,
                    started_at=attempt.started_at,
                    ended_at=attempt.ended_at,
                    outcome=attempt.outcome,
                    error=attempt.error,
                )
            )
    if "feedback" in include:
        for feedback in session.scalars(
            select(ExecutionFeedback).where(ExecutionFeedback.execution_id.in_(ids))
        ):
            parts[feedback.execution_id].feedback = feedback
    kinds = ([EXPECTED] if "expected" in include else []) + (
        [INPUT, OUTPUT, ISSUES, TRACE] if "files" in include else []
    )
    if kinds:
        rows = session.scalars(
            select(ExecutionFile)
            .where(ExecutionFile.execution_id.in_(ids), ExecutionFile.kind.in_(kinds))
            .order_by(ExecutionFile.execution_id, ExecutionFile.kind, ExecutionFile.name)
        )
        for row in rows:
            part = parts[row.execution_id]
            if row.kind == EXPECTED:
                part.expected_files.append(
                    models.ExpectedFile(
                        name=row.name, size_bytes=row.size_bytes, content_type=row.content_type
                    )
                )
            elif row.kind in (INPUT, OUTPUT):
                entry = models.ExecutionFile(
                    name=row.name, size_bytes=row.size_bytes, content_type=row.content_type
                )
                (part.inputs if row.kind == INPUT else part.outputs).append(entry)
            elif row.kind == ISSUES:
                part.has_issues = True
            else:
                part.has_trace = True
    return parts


def _pending_reasons(
    session: Session, executions: Sequence[Execution], now: datetime
) -> dict[str, str]:
    """Why each pending execution has not started, when it is not just waiting its turn."""
    reasons: dict[str, str] = {}
    grouped: dict[str, list[Execution]] = defaultdict(list)
    for execution in executions:
        if execution.status not in QUEUED:
            continue
        if execution.not_before is not None and execution.not_before > now:
            reasons[execution.id] = (
                f"retrying: attempt {execution.attempt + 1} starts after "
                f"{execution.not_before.isoformat()}"
            )
        elif execution.concurrency_key is not None:
            grouped[execution.concurrency_key].append(execution)
    if grouped:
        running = dict(
            session.execute(
                select(Execution.concurrency_key, func.count())
                .where(Execution.concurrency_key.in_(grouped), Execution.status.in_(ACTIVE))
                .group_by(Execution.concurrency_key)
            ).all()
        )
        for key, members in grouped.items():
            for execution in members:
                busy, limit = int(running.get(key, 0)), execution.concurrency_limit or 0
                if busy >= limit:
                    group = key.split(":", 1)[1]
                    reasons[execution.id] = (
                        f"waiting for a concurrency slot: {busy} of {limit} running"
                        + (f" for {group!r}" if group else "")
                    )
    return reasons


def _summary(
    execution: Execution, include: Collection[Include], parts: _Parts, reason: str | None
) -> models.AgentExecutionSummary:
    """The execution with the ``include`` parts; parts not asked for are absent (not ``null``:
    the ``eigenpal`` SDK refuses ``expectedFiles: null``)."""
    optional: dict[str, Any] = {}
    if "feedback" in include:
        optional["feedback"] = None if parts.feedback is None else feedback_entry(parts.feedback)
    if "expected" in include:
        optional["expected"] = execution.expected
        optional["expected_files"] = parts.expected_files
    if "attempts" in include:
        optional["attempts"] = parts.attempts
    if "files" in include:
        optional["files"] = models.ExecutionFiles(
            input=parts.inputs,
            output=parts.outputs,
            has_issues=parts.has_issues,
            has_trace=parts.has_trace,
        )
    return models.AgentExecutionSummary(
        id=execution.id,
        agent_id=execution.agent_id,
        status=models.ExecutionStatus(execution.status),
        created_at=execution.created_at,
        started_at=execution.started_at,
        completed_at=execution.completed_at,
        cancel_requested_at=execution.cancel_requested_at,
        duration_ms=execution.duration_ms,
        input=execution.input,
        output=execution.output,
        schema_valid=execution.schema_valid,
        error=execution.error,
        metadata=execution.run_metadata,
        batch_id=execution.batch_id,
        example_name=execution.example_name,
        source_execution_id=execution.source_execution_id,
        priority=execution.priority,
        attempt=execution.attempt,
        pending_reason=reason,
        **optional,
    )


def summaries(
    session: Session, executions: Sequence[Execution], include: Collection[Include] | None
) -> list[models.AgentExecutionSummary]:
    """The executions as the API shows them, with the ``include`` parts (one query each)."""
    wanted = set(include or ())
    parts = _load_parts(session, [execution.id for execution in executions], wanted)
    reasons = _pending_reasons(session, executions, utc_now())
    return [
        _summary(execution, wanted, parts[execution.id], reasons.get(execution.id))
        for execution in executions
    ]


class ExecutionQueries:
    """Reading, cancelling and downloading executions for a key."""

    def __init__(self, database: Database, blobs: BlobStore, engine: ExecutionEngine) -> None:
        self.database = database
        self.blobs = blobs
        self.engine = engine

    async def get(
        self, principal: Principal, execution_id: str, include: Collection[Include] | None
    ) -> models.AgentExecutionResponse:
        """One execution, with the parts ``include`` asks for."""

        def work(session: Session) -> models.AgentExecutionResponse:
            execution = find_execution(session, principal, execution_id)
            return models.AgentExecutionResponse(
                execution=summaries(session, [execution], include)[0]
            )

        return await self.database.read(work)

    async def cancel(
        self, principal: Principal, execution_id: str
    ) -> models.CancelAgentExecutionResponse:
        """Cancel per the table in this module's docstring."""

        def work(session: Session) -> models.CancelAgentExecutionResponse:
            execution = find_execution(session, principal, execution_id, lock=True)
            was = execution.status
            outcome = cancel(session, execution)
            session.flush()
            return models.CancelAgentExecutionResponse(
                execution_id=execution.id,
                status=outcome,
                was_status=models.ExecutionStatus(was),
                execution=summaries(session, [execution], None)[0],
            )

        answer = await self.database.write(work)
        self.engine.cancelled(execution_id, answer.status)
        return answer

    async def download(
        self, principal: Principal, execution_id: str, kind: FileKind, filename: str
    ) -> Response:
        """The exact bytes of one input, output, issues or trace file."""
        fixed = _FIXED_NAMES.get(kind)
        if fixed is not None and filename != fixed:
            raise HttpError(404, f"The {kind} file of an execution is named '{fixed}'")

        def work(session: Session) -> str:
            execution = find_execution(session, principal, execution_id)
            row = session.get(ExecutionFile, (execution.id, kind, filename))
            if row is None:
                raise HttpError(404, f"No {kind} file '{filename}' in execution '{execution_id}'")
            return row.blob_sha256

        digest = await self.database.read(work)
        data = await anyio.to_thread.run_sync(self.blobs.get, digest)
        basename = filename.rsplit("/", 1)[-1]
        return (
            Response.ok()
            .type(OCTET_STREAM)
            .header("content-disposition", f'attachment; filename="{basename}"')
            .body(data)
        )
