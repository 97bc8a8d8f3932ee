"""Helpers of the workflow API tests: keys with workflow scopes, definitions, waiting."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Iterable
from functools import partial
from typing import Any

from generated.agents import models
from generated.agents.client import ServiceClient
from handlers.agents.domain.keys import create_key
from tests.agents.support import RunningServer

TERMINAL = {"completed", "failed", "cancelled", "rejected"}


def scoped_key(
    server: RunningServer,
    *,
    workflows: tuple[str, ...] = (),
    agents: tuple[str, ...] = (),
    can_create: bool = False,
) -> str:
    """A key whose scope is these workflows and agents."""
    issued = server.server.database.write_sync(
        partial(
            create_key,
            name="scoped",
            workflows=workflows,
            agents=agents,
            can_create_agents=can_create,
        )
    )
    return issued.secret


def create(client: ServiceClient, yaml: str, version: str | None = None) -> models.WorkflowSummary:
    """A new workflow from ``yaml`` (dedented)."""
    body: dict[str, Any] = {"yamlContent": textwrap.dedent(yaml)}
    if version is not None:
        body["version"] = version
    return client.workflows.create(body)


def run_status(answer: models.RunWorkflowResponse) -> str | None:
    """The status of a run answer (``None`` without a wait)."""
    status = answer.status
    root = getattr(status, "root", status)
    return None if root is None else str(getattr(root, "value", root))


def summary_of(execution: Any) -> Any:
    """The model inside a ``workflows.executions.get`` answer."""
    return getattr(execution, "root", execution)


def wait_for_status(
    client: ServiceClient,
    execution_id: str,
    statuses: Iterable[str] = TERMINAL,
    timeout: float = 30.0,
) -> Any:
    """The execution (with steps) once its status is one of ``statuses``."""
    wanted = set(statuses)
    deadline = time.monotonic() + timeout
    while True:
        execution = summary_of(client.workflows.executions.get(execution_id, include_steps=True))
        if execution.status.value in wanted:
            return execution
        assert time.monotonic() < deadline, f"{execution_id} stayed {execution.status}"
        time.sleep(0.05)


def wait_for_step(
    client: ServiceClient, execution_id: str, step_id: str, status: str, timeout: float = 30.0
) -> Any:
    """The execution once step ``step_id`` has ``status``."""
    deadline = time.monotonic() + timeout
    while True:
        execution = summary_of(client.workflows.executions.get(execution_id, include_steps=True))
        steps = {step.step_id: step.status.value for step in execution.steps}
        if steps.get(step_id) == status:
            return execution
        assert time.monotonic() < deadline, f"step {step_id} stayed {steps.get(step_id)}"
        time.sleep(0.05)


def steps_of(execution: Any) -> dict[str, Any]:
    """Step id -> step result."""
    return {step.step_id: step for step in execution.steps}


def issue_messages(error: Any) -> list[str]:
    """The messages of a ServiceError's envelope."""
    return [issue["message"] for issue in error.envelope["issues"]]
