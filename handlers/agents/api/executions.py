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
from typing import Any, Literal

import anyio
from sqlalchemy import select
from sqlalchemy.orm import Session

from generated.agents import models
from handlers.agents.domain.feedback import EXPECTED, feedback_entry, find_execution
from handlers.agents.domain.keys import Principal
from handlers.agents.domain.snapshots import INPUT, ISSUES, ISSUES_NAME, OUTPUT, TRACE, TRACE_NAME
from handlers.agents.execution.engine import ExecutionEngine
from handlers.agents.execution.leases import cancel
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import Execution, ExecutionFeedback, ExecutionFile
from webrest import HttpError, Response

__all__ = ["ExecutionQueries", "FileKind", "Include", "summaries"]

Include = Literal["feedback", "expected", "files"]
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


def _load_parts(
    session: Session, ids: Sequence[str], include: Collection[Include]
) -> dict[str, _Parts]:
    parts: defaultdict[str, _Parts] = defaultdict(_Parts)
    if not ids or not include:
        return parts
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


def _summary(
    execution: Execution, include: Collection[Include], parts: _Parts
) -> models.AgentExecutionSummary:
    """The execution with the ``include`` parts; parts not asked for are absent (not ``null``:
    the ``eigenpal`` SDK refuses ``expectedFiles: null``)."""
    optional: dict[str, Any] = {}
    if "feedback" in include:
        optional["feedback"] = None if parts.feedback is None else feedback_entry(parts.feedback)
    if "expected" in include:
        optional["expected"] = execution.expected
        optional["expected_files"] = parts.expected_files
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
        **optional,
    )


def summaries(
    session: Session, executions: Sequence[Execution], include: Collection[Include] | None
) -> list[models.AgentExecutionSummary]:
    """The executions as the API shows them, with the ``include`` parts (one query each)."""
    wanted = set(include or ())
    parts = _load_parts(session, [execution.id for execution in executions], wanted)
    return [_summary(execution, wanted, parts[execution.id]) for execution in executions]


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
