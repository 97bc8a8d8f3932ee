"""Agent runs: creating an execution from a run request (or from another execution's input).

A run checks its input, then one transaction records the execution with its snapshot: the
agent's manifest (``config_snapshot``), its workspace (a snapshot document of blob hashes, see
:mod:`handlers.agents.domain.snapshots`), the input JSON and the input files (blobs written before
the transaction). The engine then dispatches it; with ``wait_for_completion`` the request is
held until the execution ends or the wait elapses (``status: timeout``; it goes on).

* **Input**: ``body.input`` (a JSON object; ``null`` or omitted: ``{}``). With multipart, every
  part but ``_json`` is a file: stored as an input file named after the part's file name (or
  the field name when that is not a valid file name) and added to the input under its field
  name as ``{"$file": "input/<name>"}``.
* **Input schema**: an input that does not match the agent's ``inputSchema`` is a 400 with one
  issue per problem (``body.input.<path>``, or ``body._json.input.<path>``); nothing is created.
* **Metadata**: ``body.metadata`` is stored; its keys ``batchId`` and ``exampleName`` also set
  the execution's experiment batch and dataset example (the list filters).
* **Rerun**: a new execution of the same agent from the source's input JSON and input files,
  with the agent's *current* manifest and workspace. An input the current ``inputSchema``
  refuses gives a ``rejected`` execution (error: why); the source is untouched.
* **Refusals**: a run or rerun of an agent whose manifest disables its API trigger
  (``triggers.api.enabled: false``) is a 403, of an archived agent a 409; nothing is created.
* **Cost**: a waited run that ended reports ``cost`` (``durationMs``); otherwise it is absent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import anyio
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.datastructures import UploadFile

from generated.agents import models
from handlers.agents.domain.agents import agent_archived, find_agent
from handlers.agents.domain.execution_records import (
    add_execution_file,
    create_execution_row,
    input_problems,
    safe_name,
)
from handlers.agents.domain.feedback import find_execution
from handlers.agents.domain.keys import Principal
from handlers.agents.domain.manifest import api_trigger_enabled
from handlers.agents.domain.promotion import EXAMPLE_NAME
from handlers.agents.domain.run_policy import concurrency_group
from handlers.agents.domain.snapshots import INPUT
from handlers.agents.execution.engine import ExecutionEngine
from handlers.agents.execution.leases import TERMINAL, announce
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import Agent, Execution, ExecutionFile
from webrest import BadRequest, ErrorDetail, HttpError

__all__ = ["AgentRuns"]


Field = tuple[str | int, ...]

FILE_NAME = re.compile(r"^[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,254}$")
BATCH_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_INPUT_FILES = 1000
MAX_ERROR_CHARS = 10000


@dataclass(frozen=True)
class _InputFile:
    name: str
    data: bytes
    content_type: str
    digest: str = ""


@dataclass(frozen=True)
class _Request:
    input: dict[str, Any]
    metadata: dict[str, Any] | None
    batch_id: str | None
    example_name: str | None
    files: list[_InputFile]
    field: Field
    """Where the body's fields are (``body`` or ``body._json``), for errors."""


def _invalid(field: Field, message: str, value: object = None) -> BadRequest:
    return BadRequest(message, [ErrorDetail(field, message, "value_error", value)])


def _file_name(field: str, upload: UploadFile) -> str:
    for candidate in ((upload.filename or "").replace("\\", "/").rsplit("/", 1)[-1], field):
        if FILE_NAME.match(candidate) and safe_name(candidate):
            return candidate
    raise _invalid(("body", field), f"No usable file name for the part {field!r}: use letters, "
                   "digits, space and . _ ( ) - in its file name", upload.filename)  # fmt: skip


def _experiment(metadata: dict[str, Any] | None, field: Field) -> tuple[str | None, str | None]:
    if metadata is None:
        return None, None
    batch = metadata.get("batchId")
    example = metadata.get("exampleName")
    if batch is not None and not (isinstance(batch, str) and BATCH_ID.match(batch)):
        raise _invalid((*field, "metadata", "batchId"),
                       "batchId must be 1 to 64 letters, digits, '_' or '-'", batch)  # fmt: skip
    if example is not None and not (isinstance(example, str) and EXAMPLE_NAME.fullmatch(example)):
        message = (
            "exampleName must be 1 to 200 characters, no control or invisible formatting "
            "character, no space at either end"
        )
        raise _invalid((*field, "metadata", "exampleName"), message, example)
    return batch, example


async def _parse(body: models.RunAgentBody | None, files: Mapping[str, UploadFile]) -> _Request:
    field: Field = ("body", "_json") if files else ("body",)
    given = body.input if body is not None and isinstance(body.input, dict) else None
    metadata = body.metadata if body is not None and isinstance(body.metadata, dict) else None
    batch_id, example_name = _experiment(metadata, field)
    data = dict(given or {})
    stored: list[_InputFile] = []
    if len(files) > MAX_INPUT_FILES:
        raise _invalid(("body",), f"At most {MAX_INPUT_FILES} input files")
    names: set[str] = set()
    for key, upload in files.items():
        name = _file_name(key, upload)
        if key in data:
            raise _invalid(("body", key), f"The input key {key!r} is given both in _json and as "
                           "a file part")  # fmt: skip
        if name in names:
            raise _invalid(("body", key), f"Two file parts are named {name!r}", upload.filename)
        names.add(name)
        content = await upload.read()
        media = upload.content_type or "application/octet-stream"
        stored.append(_InputFile(name, content, media))
        data[key] = {"$file": f"input/{name}"}
    return _Request(data, metadata, batch_id, example_name, stored, field)


def _check_runnable(agent: Agent) -> None:
    """403 when the agent's API trigger is disabled, 409 when it is archived."""
    if not api_trigger_enabled(agent.config):
        raise HttpError(403, f"The API trigger of agent '{agent.slug}' is disabled")
    if agent.archived_at is not None:
        raise agent_archived(agent)


def _check_input(config: Mapping[str, Any], request: _Request) -> None:
    schema = config.get("inputSchema")
    if not isinstance(schema, dict):
        return
    problems = input_problems(request.input, schema)
    if problems:
        details = [
            ErrorDetail((*request.field, "input", *path), message, "value_error")
            for path, message in problems
        ]
        summary = f"The input does not match the agent's inputSchema ({len(problems)} problem"
        raise BadRequest(summary + ("s)" if len(problems) > 1 else ")"), details)


T = TypeVar("T")


@dataclass(frozen=True)
class _Group:
    """A run's concurrency group, computed for the manifest whose key template is
    ``template``."""

    template: str | None
    computed: tuple[str, int] | None
    """The group and its limit (``concurrency_group``), ``None`` without one."""


class _GroupNeeded(Exception):
    """The agent's manifest groups runs by an expression: compute it, then try again."""

    def __init__(self, agent_id: str, config: dict[str, Any]) -> None:
        super().__init__(agent_id)
        self.agent_id = agent_id
        self.config = config


def _group_template(config: Mapping[str, Any]) -> str | None:
    """The manifest's concurrency key expression, or ``None``."""
    concurrency = config.get("concurrency")
    key = concurrency.get("key") if isinstance(concurrency, dict) else None
    return key if isinstance(key, str) else None


def _bound(
    work: Callable[[Session, _Group | None], T], group: _Group | None
) -> Callable[[Session], T]:
    def bound(session: Session) -> T:
        return work(session, group)

    return bound


class AgentRuns:
    """Creating executions: runs and reruns."""

    def __init__(self, database: Database, blobs: BlobStore, engine: ExecutionEngine) -> None:
        self.database = database
        self.blobs = blobs
        self.engine = engine

    async def run(
        self,
        principal: Principal,
        agent_ref: str,
        body: models.RunAgentBody | None,
        files: Mapping[str, UploadFile],
        wait_seconds: int | None,
        priority: int = 0,
    ) -> models.RunAgentResponse:
        """Create and dispatch an execution; with ``wait_seconds``, wait for its end."""
        request = await _parse(body, files)
        inputs = (
            await anyio.to_thread.run_sync(self._store_inputs, request.files)
            if request.files
            else []
        )
        status = self.engine.initial_status

        def work(session: Session, group: _Group | None) -> str:
            agent = find_agent(session, principal, agent_ref)
            _check_runnable(agent)
            _check_input(agent.config, request)
            execution = self._create(
                session, principal, agent, request.input, status, priority, group
            )
            execution.run_metadata = request.metadata
            execution.batch_id, execution.example_name = request.batch_id, request.example_name
            for file in inputs:
                add_execution_file(session, execution.id, INPUT, file.name, file.digest,
                               len(file.data), file.content_type)  # fmt: skip
            return execution.id

        execution_id = await self._write_grouped(work, request.input, request.field)
        if await self.engine.dispatch_or_leave(execution_id):
            status = "pending"
        if wait_seconds is None:
            return models.RunAgentResponse(
                execution_id=execution_id,
                status=models.RunAgentStatus(status),
                output=None,
                schema_valid=None,
                error=None,
            )
        ended = await self.engine.wait(execution_id, wait_seconds)
        execution = await self.database.read(lambda session: session.get(Execution, execution_id))
        if not ended or execution is None:
            return models.RunAgentResponse(
                execution_id=execution_id,
                status=models.RunAgentStatus.timeout,
                output=None,
                schema_valid=None,
                error=None,
            )
        return models.RunAgentResponse(
            execution_id=execution_id,
            status=models.RunAgentStatus(execution.status),
            output=execution.output,
            schema_valid=execution.schema_valid,
            error=execution.error,
            cost=models.RunCost(duration_ms=execution.duration_ms),
        )

    async def rerun(
        self, principal: Principal, execution_id: str, priority: int = 0
    ) -> models.RerunAgentExecutionResponse:
        """A new execution from the stored input snapshot of ``execution_id``."""
        source_input: dict[str, Any] = {}

        def work(session: Session, group: _Group | None) -> Execution:
            source = find_execution(session, principal, execution_id)
            if source.input is None:
                message = "The execution has no stored input snapshot to rerun"
                raise HttpError(409, message, [ErrorDetail(("path", "executionId"), message,
                                                           "conflict")])  # fmt: skip
            agent = session.get(Agent, source.agent_id)
            assert agent is not None  # the foreign key cascades deletions
            _check_runnable(agent)
            source_input.update(source.input)
            execution = self._create(
                session, principal, agent, source.input, "created", priority, group
            )
            execution.run_metadata = source.run_metadata
            execution.example_name = source.example_name
            execution.source_execution_id = source.id
            inputs = session.scalars(
                select(ExecutionFile).where(
                    ExecutionFile.execution_id == source.id, ExecutionFile.kind == INPUT
                )
            ).all()
            for row in inputs:
                add_execution_file(session, execution.id, INPUT, row.name, row.blob_sha256,
                               row.size_bytes, row.content_type)  # fmt: skip
            schema = (agent.config or {}).get("inputSchema")
            problems = input_problems(source.input, schema) if isinstance(schema, dict) else []
            if problems:
                execution.status = "rejected"
                execution.completed_at = execution.created_at
                reasons = "; ".join(message for _, message in problems)
                execution.error = f"input does not match the inputSchema: {reasons}"[
                    :MAX_ERROR_CHARS
                ]
                session.flush()
                announce(session, execution.id)  # ended at once: webhook events, waiters
            else:
                execution.status = self.engine.initial_status
            return execution

        execution = await self._write_grouped(work, source_input, ("body",))
        status = execution.status
        if status not in TERMINAL and await self.engine.dispatch_or_leave(execution.id):
            status = "pending"
        return models.RerunAgentExecutionResponse(
            execution_id=execution.id,
            source_execution_id=execution_id,
            status=models.ExecutionStatus(status),
        )

    def _store_inputs(self, files: Sequence[_InputFile]) -> list[_InputFile]:
        return [
            _InputFile(file.name, file.data, file.content_type, self.blobs.put(file.data))
            for file in files
        ]

    def _create(
        self,
        session: Session,
        principal: Principal,
        agent: Agent,
        input_json: dict[str, Any],
        status: str,
        priority: int,
        group: _Group | None,
    ) -> Execution:
        """A new execution row of ``agent`` with the snapshot of its manifest and workspace, in
        its concurrency group (``group``, computed for this very manifest: see
        :meth:`_write_grouped`)."""
        key = _group_template(agent.config)
        if key is None:  # no expression to evaluate: the agent's one group, or none
            computed = concurrency_group(agent.id, agent.config, input_json, ("body",))
        elif group is not None and group.template == key:
            computed = group.computed
        else:
            raise _GroupNeeded(agent.id, agent.config)
        execution = create_execution_row(
            session, self.blobs, agent, input_json, status, principal.key_id, priority
        )
        if computed is not None:
            execution.concurrency_key, execution.concurrency_limit = computed
        return execution

    async def _write_grouped(
        self, work: Callable[[Session, _Group | None], T], input_json: dict[str, Any], field: Field
    ) -> T:
        """Run the creating transaction ``work``. When the agent's manifest has a concurrency
        key (an expression over the input, bounded but CPU-bound), the first try stops before
        writing anything; the key is computed outside any transaction and ``work`` runs again
        with it (again, should the manifest have changed meanwhile)."""
        group: _Group | None = None
        for _ in range(3):
            try:
                return await self.database.write(_bound(work, group))
            except _GroupNeeded as needed:
                config = needed.config
                computed = await anyio.to_thread.run_sync(
                    partial(concurrency_group, needed.agent_id, config, input_json or {}, field)
                )
                group = _Group(_group_template(config), computed)
        raise HttpError(409, "The agent's manifest kept changing: try again")
