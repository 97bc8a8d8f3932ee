"""Helpers of the real-SDK tests: agents made through the SDK, waiting with the SDK, workflow
definitions (created with our own client: the SDK cannot create workflows)."""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from eigenpal import EigenpalClient
from eigenpal._generated.models.agent_execution_summary import AgentExecutionSummary
from eigenpal._generated.models.execution_summary import ExecutionSummary
from eigenpal._generated.models.workflow_execution_status_response import (
    WorkflowExecutionStatusResponse,
)
from eigenpal._generated.types import Unset

from generated.agents.client import ServiceClient
from tests.agents.run_support import WORKER_AGENT

TERMINAL = frozenset({"completed", "failed", "cancelled", "rejected"})

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 8
BINARY = bytes(range(256)) * 3 + b"\x00\r\n\xff"

WorkflowExecution = ExecutionSummary | WorkflowExecutionStatusResponse


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def value_of(value: object) -> object:
    """A generated enum's value; anything else (a plain string, ``None``, UNSET) as it is."""
    return value.value if isinstance(value, Enum) else value


def absent(value: object) -> bool:
    """Whether the SDK parsed the field as absent from the answer (UNSET)."""
    return isinstance(value, Unset)


def new_agent(
    sdk: EigenpalClient,
    unique: str,
    *,
    config: dict[str, Any] | None = None,
    program: str | None = WORKER_AGENT,
) -> str:
    """A new agent's slug, made with the SDK; its ``main.py`` is ``program`` (None: the
    starter) written with ``put_file``."""
    slug = f"sdk-{unique}-{secrets.token_hex(3)}"
    sdk.agents.create(name=slug, slug=slug, config=config)
    if program is not None:
        sdk.agents.put_file(slug, "main.py", content_base64=b64(program.encode()))
    return slug


def wait_for_execution(
    sdk: EigenpalClient,
    execution_id: str,
    statuses: Iterable[str] = TERMINAL,
    timeout: float = 30.0,
) -> AgentExecutionSummary:
    """The agent execution once its status is one of ``statuses`` (fails after ``timeout``).

    It reads with ``include="feedback,expected"`` so that waiting does not depend on how an
    answer without ``include`` looks (the tests of ``executions.get`` check that)."""
    wanted = set(statuses)
    deadline = time.monotonic() + timeout
    while True:
        execution = sdk.agents.executions.get(execution_id, include="feedback,expected").execution
        if execution.status.value in wanted:
            return execution
        assert time.monotonic() < deadline, f"{execution_id} stayed {execution.status.value}"
        time.sleep(0.05)


def workflow_execution_id(execution: WorkflowExecution) -> str:
    """The id in either shape ``workflows.executions.get`` may parse an answer into."""
    if isinstance(execution, WorkflowExecutionStatusResponse):
        return execution.execution_id
    return execution.id


def wait_for_workflow(
    sdk: EigenpalClient,
    execution_id: str,
    statuses: Iterable[str] = TERMINAL,
    timeout: float = 30.0,
) -> WorkflowExecution:
    """The workflow execution once its status is one of ``statuses``."""
    wanted = set(statuses)
    deadline = time.monotonic() + timeout
    while True:
        execution: WorkflowExecution = sdk.workflows.executions.get(execution_id)
        if execution.status.value in wanted:
            return execution
        assert time.monotonic() < deadline, f"{execution_id} stayed {execution.status.value}"
        time.sleep(0.05)


@dataclass
class Leftovers:
    """Long executions a test starts: cancelled when it ends, whatever happened, so that they
    do not hold the server's execution slots (a waiting workflow holds one) for later tests."""

    workflows: list[str] = field(default_factory=list)
    agent_executions: list[str] = field(default_factory=list)


# -- workflows (created with our own client) -----------------------------------------------------


def create_workflow(client: ServiceClient, yaml: str, version: str | None = None) -> str:
    """A new workflow from ``yaml``; its id (``wf_…``)."""
    body: dict[str, Any] = {"yamlContent": yaml}
    if version is not None:
        body["version"] = version
    return client.workflows.create(body).id


def constant_yaml(
    slug: str, value: int, *, title: str | None = None, kind: str = "workflow"
) -> str:
    """A workflow whose result is ``value``."""
    head = f"name: {slug}\nkind: {kind}\n" + (f"title: {title}\n" if title else "")
    return head + (
        f"steps:\n  - id: only\n    type: transform\n    value: {value}\n"
        "result: ${{ steps.only.output }}\n"
    )


def waiting_yaml(slug: str, duration: str) -> str:
    """A workflow that waits ``duration`` (e.g. ``60s``), then answers ``done``."""
    return (
        f"name: {slug}\nsteps:\n  - id: pause\n    type: wait\n    duration: {duration}\n"
        "  - id: after\n    type: transform\n    needs: pause\n    value: done\n"
        "result: ${{ steps.after.output }}\n"
    )


def file_reading_yaml(slug: str, agent: str) -> str:
    """A workflow handing a file input and a string input to the worker agent; its result is
    the agent's output."""
    return (
        f"name: {slug}\ninputs:\n  doc: file\n  label: string\nsteps:\n"
        f"  - id: read\n    type: agent\n    agent: {agent}\n    input:\n"
        "      doc: ${{ inputs.doc }}\n      label: ${{ inputs.label }}\n"
        "result: ${{ steps.read.output }}\n"
    )
