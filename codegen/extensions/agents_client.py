"""Hand-written client methods of the agents API that no single operation expresses.

``x-codegen.client-extensions: agents_client`` in specs/agents.openapi.yaml makes
``make generate`` copy this module to ``generated/agents/client_extensions.py`` and make each
generated namespace class inherit the mixin named after it: ``_WorkflowsExecutions`` inherits
``WorkflowsExecutionsExtension``, ``_AsyncWorkflowsExecutions`` inherits
``AsyncWorkflowsExecutionsExtension``. A mixin reaches the client through ``self._client``
and uses only the generated methods, so it imports nothing from the client module.

* ``workflows.executions.run_and_wait(workflow, input=…)`` (the seed's client method): runs a
  workflow asking the server to hold the answer until the execution ends (``wait_for_completion``:
  up to SERVER_WAIT_SECONDS, within ``timeout_seconds`` and 5 s below the client's request
  timeout), so a short workflow takes one request; one still running then is polled with
  ``workflows.executions.get`` until it is terminal. File values of ``input`` go as multipart
  parts, the others in ``_json``. Returns a ``RunWorkflowResponse`` (``executionId``,
  ``status``, ``result``, ``error``). ``timeout_seconds`` (default: none) bounds the whole wait
  (``TimeoutError``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from generated.agents import models

__all__ = ["AsyncWorkflowsExecutionsExtension", "WorkflowsExecutionsExtension"]

TERMINAL = frozenset({"completed", "failed", "cancelled", "rejected"})
FIRST_POLL_SECONDS = 0.05
MAX_POLL_SECONDS = 1.0
SERVER_WAIT_SECONDS = 30
"""The longest wait a run request asks of the server (which allows up to 60 s)."""
REQUEST_MARGIN_SECONDS = 5
"""A held request's wait stays this far below the client's own request timeout."""


def _server_wait(request_timeout: float | None, deadline: float | None) -> int | None:
    """The run request's ``wait_for_completion``: whole seconds within the caller's deadline
    and below the client's request timeout; ``None`` (no wait) when under a second is left."""
    seconds = SERVER_WAIT_SECONDS
    if request_timeout is not None:
        seconds = min(seconds, int(request_timeout - REQUEST_MARGIN_SECONDS))
    if deadline is not None:
        seconds = min(seconds, int(deadline - time.monotonic()))
    return seconds if seconds >= 1 else None


def _is_file(value: object) -> bool:
    """Whether an input value is a file (bytes, a path, a binary file or a (name, content)
    tuple, as ``FileInput`` accepts)."""
    if isinstance(value, bytes | bytearray | Path):
        return True
    if isinstance(value, tuple):
        return len(value) in (2, 3) and isinstance(value[0], str)
    return hasattr(value, "read") and not isinstance(value, str)


def _split(
    input: Mapping[str, Any] | None,
    overrides: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON body (scalar inputs, overrides) and the file parts."""
    scalars: dict[str, Any] = {}
    files: dict[str, Any] = {}
    for key, value in (input or {}).items():
        (files if _is_file(value) else scalars)[key] = value
    body: dict[str, Any] = {"input": scalars}
    if overrides:
        body["overrides"] = {"steps": dict(overrides)}
    return body, files


def _terminal_outcome(execution_id: str, execution: Any) -> models.RunWorkflowResponse | None:
    """The run's outcome once ``execution`` (a ``workflows.run`` or
    ``workflows.executions.get`` answer) is terminal; ``None`` before."""
    summary = getattr(execution, "root", execution)
    state = getattr(summary.status, "root", summary.status)  # the run's answer wraps it
    status = str(getattr(state, "value", state))
    if status not in TERMINAL:
        return None
    return models.RunWorkflowResponse.model_validate(
        {
            "executionId": execution_id,
            "status": status,
            "result": summary.result,
            "error": summary.error,
        }
    )


class WorkflowsExecutionsExtension:
    """``workflows.executions`` methods of the synchronous client."""

    _client: Any

    def run_and_wait(
        self,
        workflow: str,
        input: Mapping[str, Any] | None = None,
        *,
        version: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        timeout_seconds: float | None = None,
    ) -> models.RunWorkflowResponse:
        """Run ``workflow`` (id or slug) and wait until its execution is terminal."""
        deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
        body, files = _split(input, overrides)
        started = self._client.workflows.run(
            workflow,
            body,
            files=files or None,
            version=version,
            wait_for_completion=_server_wait(self._client.timeout_seconds, deadline),
        )
        execution_id = started.execution_id
        outcome = _terminal_outcome(execution_id, started)
        if outcome is not None:
            return outcome
        delay = FIRST_POLL_SECONDS
        while True:
            execution = self._client.workflows.executions.get(execution_id)
            outcome = _terminal_outcome(execution_id, execution)
            if outcome is not None:
                return outcome
            if deadline is not None and time.monotonic() + delay > deadline:
                raise TimeoutError(f"workflow execution {execution_id} did not end in time")
            time.sleep(delay)
            delay = min(delay * 2, MAX_POLL_SECONDS)


class AsyncWorkflowsExecutionsExtension:
    """``workflows.executions`` methods of the asynchronous client."""

    _client: Any

    async def run_and_wait(
        self,
        workflow: str,
        input: Mapping[str, Any] | None = None,
        *,
        version: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        timeout_seconds: float | None = None,
    ) -> models.RunWorkflowResponse:
        """Run ``workflow`` (id or slug) and wait until its execution is terminal."""
        deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
        body, files = _split(input, overrides)
        started = await self._client.workflows.run(
            workflow,
            body,
            files=files or None,
            version=version,
            wait_for_completion=_server_wait(self._client.timeout_seconds, deadline),
        )
        execution_id = started.execution_id
        outcome = _terminal_outcome(execution_id, started)
        if outcome is not None:
            return outcome
        delay = FIRST_POLL_SECONDS
        while True:
            execution = await self._client.workflows.executions.get(execution_id)
            outcome = _terminal_outcome(execution_id, execution)
            if outcome is not None:
                return outcome
            if deadline is not None and time.monotonic() + delay > deadline:
                raise TimeoutError(f"workflow execution {execution_id} did not end in time")
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_POLL_SECONDS)
