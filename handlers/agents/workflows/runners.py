"""The usual set of step runners for a WorkflowEngine."""

from __future__ import annotations

from handlers.agents.egress import EgressPolicy
from handlers.agents.workflows.definition import StepType
from handlers.agents.workflows.http_step import HttpStepRunner
from handlers.agents.workflows.steps import (
    AgentInvoker,
    AgentStepRunner,
    BlockInvoker,
    BlockStepRunner,
    StepRunner,
    TransformStepRunner,
    WaitStepRunner,
)


def standard_runners(
    *,
    agents: AgentInvoker | None = None,
    blocks: BlockInvoker | None = None,
    http: HttpStepRunner | None = None,
) -> dict[StepType, StepRunner]:
    """Runners for every step type; agent and block steps only when their invoker is given
    (a step without a runner fails with "no runner for agent steps"). Without ``http``, http
    steps reach public addresses only (the default egress policy)."""
    runners: dict[StepType, StepRunner] = {
        "transform": TransformStepRunner(),
        "wait": WaitStepRunner(),
        "http": http if http is not None else HttpStepRunner(egress=EgressPolicy()),
    }
    if agents is not None:
        runners["agent"] = AgentStepRunner(agents)
    if blocks is not None:
        runners["block"] = BlockStepRunner(blocks)
    return runners
