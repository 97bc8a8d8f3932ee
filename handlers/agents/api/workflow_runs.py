"""Workflow runs: creating a workflow execution from a run request, and waiting for it.

* **Version**: ``latest`` (default), a version id or a release tag such as ``1.0.0`` (an id
  is matched first); 404 when the workflow has no such version. An archived workflow is a 409.
* **Inputs**: ``body.input`` (JSON, or the ``_json`` part of a multipart body); every other
  multipart part is a file input named after its field, stored as a blob before the
  transaction and given to the run as ``{name, size, contentType, sha256}``. The inputs are
  checked against the version's declared inputs at once: inputs that do not fit, or
  ``overrides.steps`` naming steps the version does not have, give a ``rejected`` execution
  whose error says why (like an agent rerun refused by the input schema: the request itself
  is well-formed, so it is answered 201). ``exampleId`` and ``trigger`` are recorded.
* The execution is queued like an agent execution (a ``pending`` row, ``priority`` setting
  its rank) and the workers are woken. With ``wait_for_completion`` (1 to
  60 s) the request is held until it ends or the wait elapses; the answer is 201 either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from sqlalchemy.orm import Session
from starlette.datastructures import UploadFile

from generated.agents import models
from handlers.agents.domain.execution_records import safe_name
from handlers.agents.domain.keys import Principal
from handlers.agents.domain.workflow_execution_records import (
    create_workflow_execution_row,
    workflow_run_refusal,
)
from handlers.agents.domain.workflow_store import find_workflow, resolve_version
from handlers.agents.execution.engine import ExecutionEngine
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import WorkflowExecution, queue_rank
from webrest import BadRequest, ErrorDetail, HttpError

__all__ = ["WorkflowRuns"]


Field = tuple[str | int, ...]
MAX_INPUT_FILES = 100


@dataclass(frozen=True)
class _Request:
    input: dict[str, Any]
    overrides: dict[str, Any] | None
    trigger: str
    example_id: str | None
    field: Field


def _parse(body: models.RunWorkflowBody | None, files: Mapping[str, UploadFile]) -> _Request:
    field: Field = ("body", "_json") if files else ("body",)
    given = body.input if body is not None and isinstance(body.input, dict) else None
    overrides = None
    if body is not None and isinstance(body.overrides, models.WorkflowRunOverrides):
        steps = body.overrides.steps
        overrides = {"steps": dict(steps)} if isinstance(steps, dict) and steps else None
    trigger = "api"
    if body is not None and isinstance(body.trigger, models.WorkflowTrigger):
        root = body.trigger.root
        trigger = root.value if isinstance(root, models.WorkflowTriggerEnum) else "api"
    example = body.example_id if body is not None and isinstance(body.example_id, str) else None
    return _Request(dict(given or {}), overrides, trigger, example, field)


def _file_name(key: str, upload: UploadFile) -> str:
    """The part's file name when it is a safe one (it names the file for agents), else the
    field's name."""
    candidate = (upload.filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    return candidate if candidate and len(candidate) <= 255 and safe_name(candidate) else key


def _invalid(field: Field, message: str) -> BadRequest:
    return BadRequest(message, [ErrorDetail(field, message, "value_error")])


class WorkflowRuns:
    """Creating workflow executions and waiting for them."""

    def __init__(self, database: Database, blobs: BlobStore, engine: ExecutionEngine) -> None:
        self.database = database
        self.blobs = blobs
        self.engine = engine

    async def run(
        self,
        principal: Principal,
        ref: str,
        body: models.RunWorkflowBody | None,
        files: Mapping[str, UploadFile],
        version: str,
        wait_seconds: int | None,
        priority: int = 0,
    ) -> models.RunWorkflowResponse:
        """Create and dispatch an execution; with ``wait_seconds``, wait for its end."""
        request = _parse(body, files)
        if len(files) > MAX_INPUT_FILES:
            raise _invalid(("body",), f"At most {MAX_INPUT_FILES} file inputs")
        for key in files:
            if key in request.input:
                raise _invalid(("body", key), f"The input {key!r} is given both in _json and "
                               "as a file part")  # fmt: skip
        uploaded = {key: await upload.read() for key, upload in files.items()}

        def store() -> dict[str, dict[str, Any]]:
            return {
                key: {
                    "name": _file_name(key, files[key]),
                    "size": len(data),
                    "contentType": files[key].content_type or "application/octet-stream",
                    "sha256": self.blobs.put(data),
                }
                for key, data in uploaded.items()
            }

        inputs = {**request.input, **await anyio.to_thread.run_sync(store)}
        status = self.engine.initial_status

        def choose(session: Session) -> tuple[str, str, str]:
            workflow = find_workflow(session, principal, ref)
            if workflow.archived_at is not None:
                message = f"Workflow '{workflow.slug}' is archived: restore it to run it"
                raise HttpError(409, message, [ErrorDetail(("path", "id"), message, "conflict")])
            chosen = resolve_version(session, workflow, version)
            return workflow.id, chosen.id, chosen.yaml_content

        workflow_id, version_id, yaml = await self.database.read(choose)

        # CPU-bound: in a worker thread, outside any transaction
        refusal = await anyio.to_thread.run_sync(
            workflow_run_refusal, yaml, inputs, request.overrides
        )

        def work(session: Session) -> tuple[str, bool]:
            execution = create_workflow_execution_row(
                session,
                workflow_id=workflow_id,
                version_id=version_id,
                inputs=inputs,
                status=status,
                refusal=refusal,
                trigger=request.trigger,
                created_by_key=principal.key_id,
                overrides=request.overrides,
                example_id=request.example_id,
            )
            execution.priority = priority
            execution.queue_rank = queue_rank(execution.created_at, priority)
            return execution.id, refusal is None

        execution_id, runnable = await self.database.write(work)
        if runnable:
            await self.engine.dispatch_or_leave(execution_id)
        if wait_seconds is None:
            return models.RunWorkflowResponse(execution_id=execution_id)  # no other key
        await self.engine.wait(execution_id, wait_seconds)
        row = await self.database.read(lambda session: session.get(WorkflowExecution, execution_id))
        assert row is not None  # executions are not deleted while their workflow exists
        return models.RunWorkflowResponse.model_validate(
            {
                "executionId": execution_id,
                "status": row.status,
                "result": row.result,
                "error": row.error,
            }
        )
