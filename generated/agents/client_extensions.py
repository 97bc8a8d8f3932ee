# Copied from codegen/extensions/ by `make generate`; do not edit here.
"""Hand-written client methods of the agents API that no single operation expresses.

``x-codegen.client-extensions: agents_client`` in specs/agents.openapi.yaml makes
``make generate`` copy this module to ``generated/agents/client_extensions.py`` and make each
generated namespace class inherit the mixin named after it: ``_WorkflowsExecutions`` inherits
``WorkflowsExecutionsExtension``, ``_AsyncWorkflowsExecutions`` inherits
``AsyncWorkflowsExecutionsExtension``. A mixin reaches the client through ``self._client``
and uses only the generated methods; the client module imports this one, so the client's
error classes are imported when raised, never at import time.

* ``workflows.executions.run_and_wait(workflow_id, input=None, *, version=None,
  poll_interval_seconds=2.0, timeout_seconds=300.0, overrides=None)`` (the product SDK's
  method, same names and defaults): runs a workflow and waits until its execution is terminal.
  The run request asks the server to hold the answer until the execution ends
  (``wait_for_completion``: up to SERVER_WAIT_SECONDS, whole seconds within
  ``timeout_seconds`` and 5 s below the client's request timeout), so a short workflow takes
  one request; one still running then is polled with ``workflows.executions.get`` every
  ``poll_interval_seconds`` (at once when the run was not held), never sleeping past the
  deadline. ``timeout_seconds`` bounds the whole wait, the run request included: when it
  passes, ``ServiceTimeoutError("run_and_wait timed out after {timeout_seconds}s
  (execution_id=…)")`` (``status`` 0, as the SDK's ``EigenpalTimeoutError``);
  ``timeout_seconds=None`` waits without a bound. Both must be positive (``ValueError``).
  File values of ``input`` (bytes, paths, binary files, ``(name, content[, type])``) go as
  multipart parts, the others in ``_json``. ``overrides`` is the run body's
  ``WorkflowRunOverrides`` (``{"steps": {step id: output}}``), as the SDK sends it; a mapping
  without a ``steps`` key is taken as the steps map itself. Returns a ``RunAndWaitResult``: a
  ``RunWorkflowResponse`` (``execution_id``, ``status``, ``result``, ``error``) that also
  reads as the SDK's dict, ``outcome["executionId"]``, ``outcome["status"]`` (a string),
  ``outcome["result"]``, ``outcome["error"]``.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generated.agents import models

if TYPE_CHECKING:
    from generated.agents.client import ServiceTimeoutError

__all__ = [
    "AsyncWorkflowsExecutionsExtension",
    "RunAndWaitResult",
    "WorkflowsExecutionsExtension",
]

TERMINAL = frozenset({"completed", "failed", "cancelled", "rejected"})
DEFAULT_POLL_INTERVAL_SECONDS = 2.0
"""The SDK's ``run_and_wait`` default."""
DEFAULT_TIMEOUT_SECONDS = 300.0
"""The SDK's ``run_and_wait`` default (5 minutes)."""
SERVER_WAIT_SECONDS = 30
"""The longest wait a run request asks of the server (which allows up to 60 s)."""
REQUEST_MARGIN_SECONDS = 5
"""A held request's wait stays this far below the client's own request timeout."""


class RunAndWaitResult(models.RunWorkflowResponse):
    """``run_and_wait``'s outcome: the model, which also reads as the SDK's dict by the wire
    names ``executionId``, ``status`` (the status as a string), ``result`` and ``error``."""

    def __getitem__(self, key: str) -> Any:
        if key == "executionId":
            return self.execution_id
        if key == "status":
            status = getattr(self.status, "root", self.status)
            return getattr(status, "value", status)
        if key in ("result", "error"):
            return getattr(self, key)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def keys(self) -> list[str]:
        return ["executionId", "status", "result", "error"]


def _check(poll_interval_seconds: float, timeout_seconds: float | None) -> float | None:
    """The deadline (``time.monotonic()`` based; ``None``: none) of valid arguments."""
    if not poll_interval_seconds > 0 or math.isinf(poll_interval_seconds):
        raise ValueError(
            f"poll_interval_seconds must be a positive number, not {poll_interval_seconds!r}"
        )
    if timeout_seconds is None:
        return None
    if not timeout_seconds > 0:
        raise ValueError(f"timeout_seconds must be a positive number, not {timeout_seconds!r}")
    return None if math.isinf(timeout_seconds) else time.monotonic() + timeout_seconds


def _server_wait(request_timeout: float | None, deadline: float | None) -> int | None:
    """The run request's ``wait_for_completion``: whole seconds within the caller's deadline
    and below the client's request timeout; ``None`` (no wait) when under a second is left."""
    seconds = SERVER_WAIT_SECONDS
    if request_timeout is not None:
        seconds = min(seconds, int(request_timeout - REQUEST_MARGIN_SECONDS))
    if deadline is not None:
        seconds = min(seconds, int(deadline - time.monotonic()))
    return seconds if seconds >= 1 else None


def _pause(poll_interval_seconds: float, deadline: float | None) -> float:
    """How long to sleep before the next poll: the interval, cut at the deadline."""
    if deadline is None:
        return poll_interval_seconds
    return max(0.0, min(poll_interval_seconds, deadline - time.monotonic()))


def _timed_out(timeout_seconds: float | None, execution_id: str) -> ServiceTimeoutError:
    """The client's ``ServiceTimeoutError``, worded as the SDK's."""
    from generated.agents.client import ServiceTimeoutError  # the client imports this module

    return ServiceTimeoutError(
        f"run_and_wait timed out after {timeout_seconds}s (execution_id={execution_id})",
        status=0,
    )


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
    overrides: Mapping[str, Any] | models.WorkflowRunOverrides | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON body (scalar inputs, overrides) and the file parts."""
    scalars: dict[str, Any] = {}
    files: dict[str, Any] = {}
    for key, value in (input or {}).items():
        (files if _is_file(value) else scalars)[key] = value
    body: dict[str, Any] = {"input": scalars}
    if isinstance(overrides, models.WorkflowRunOverrides):
        body["overrides"] = overrides.model_dump(by_alias=True, exclude_unset=True)
    elif overrides is not None:
        body["overrides"] = dict(overrides) if "steps" in overrides else {"steps": dict(overrides)}
    return body, files


def _terminal_outcome(execution_id: str, execution: Any) -> RunAndWaitResult | None:
    """The run's outcome once ``execution`` (a ``workflows.run`` or
    ``workflows.executions.get`` answer) is terminal; ``None`` before."""
    summary = getattr(execution, "root", execution)
    state = getattr(summary.status, "root", summary.status)  # the run's answer wraps it
    status = str(getattr(state, "value", state))
    if status not in TERMINAL:
        return None
    return RunAndWaitResult.model_validate(
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
        workflow_id: str,
        input: Mapping[str, Any] | None = None,
        *,
        version: str | None = None,
        poll_interval_seconds: float = DEFAULT_POLL_INTERVAL_SECONDS,
        timeout_seconds: float | None = DEFAULT_TIMEOUT_SECONDS,
        overrides: Mapping[str, Any] | models.WorkflowRunOverrides | None = None,
    ) -> RunAndWaitResult:
        """Run ``workflow_id`` (id or slug) and wait until its execution is terminal."""
        deadline = _check(poll_interval_seconds, timeout_seconds)
        body, files = _split(input, overrides)
        wait = _server_wait(self._client.timeout_seconds, deadline)
        started = self._client.workflows.run(
            workflow_id, body, files=files or None, version=version, wait_for_completion=wait
        )
        execution_id = started.execution_id
        outcome = _terminal_outcome(execution_id, started)
        pause = 0.0 if wait is None else _pause(poll_interval_seconds, deadline)
        while outcome is None:
            if pause > 0:
                time.sleep(pause)
            if deadline is not None and time.monotonic() >= deadline:
                raise _timed_out(timeout_seconds, execution_id)
            execution = self._client.workflows.executions.get(execution_id)
            outcome = _terminal_outcome(execution_id, execution)
            pause = _pause(poll_interval_seconds, deadline)
        return outcome


class AsyncWorkflowsExecutionsExtension:
    """``workflows.executions`` methods of the asynchronous client."""

    _client: Any

    async def run_and_wait(
        self,
        workflow_id: str,
        input: Mapping[str, Any] | None = None,
        *,
        version: str | None = None,
        poll_interval_seconds: float = DEFAULT_POLL_INTERVAL_SECONDS,
        timeout_seconds: float | None = DEFAULT_TIMEOUT_SECONDS,
        overrides: Mapping[str, Any] | models.WorkflowRunOverrides | None = None,
    ) -> RunAndWaitResult:
        """Run ``workflow_id`` (id or slug) and wait until its execution is terminal."""
        deadline = _check(poll_interval_seconds, timeout_seconds)
        body, files = _split(input, overrides)
        wait = _server_wait(self._client.timeout_seconds, deadline)
        started = await self._client.workflows.run(
            workflow_id, body, files=files or None, version=version, wait_for_completion=wait
        )
        execution_id = started.execution_id
        outcome = _terminal_outcome(execution_id, started)
        pause = 0.0 if wait is None else _pause(poll_interval_seconds, deadline)
        while outcome is None:
            if pause > 0:
                await asyncio.sleep(pause)
            if deadline is not None and time.monotonic() >= deadline:
                raise _timed_out(timeout_seconds, execution_id)
            execution = await self._client.workflows.executions.get(execution_id)
            outcome = _terminal_outcome(execution_id, execution)
            pause = _pause(poll_interval_seconds, deadline)
        return outcome
