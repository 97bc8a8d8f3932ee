"""Workflows: the YAML definition format, the sandboxed expression language and the engine
that runs a definition's steps (see README.md). Knows nothing of the database or HTTP: the
integration parses released YAML with ``parse_workflow``, runs it with ``WorkflowEngine`` and
stores what the ``ExecutionJournal`` receives.
"""

from handlers.agents.workflows.definition import (
    InputDefinition,
    RetryPolicy,
    StepDefinition,
    WorkflowDefinition,
)
from handlers.agents.workflows.engine import WorkflowEngine, WorkflowOutcome
from handlers.agents.workflows.expressions import (
    EvaluationError,
    Expression,
    ExpressionError,
    compile_expression,
    evaluate,
)
from handlers.agents.workflows.http_step import HttpStepRunner
from handlers.agents.workflows.inputs import InputError, bind_inputs
from handlers.agents.workflows.parse import parse_workflow
from handlers.agents.workflows.records import (
    ExecutionJournal,
    MemoryJournal,
    StepRecord,
    StepStatus,
    WorkflowState,
    WorkflowStatus,
)
from handlers.agents.workflows.runners import standard_runners
from handlers.agents.workflows.steps import (
    AgentInvoker,
    AgentRequest,
    AgentResult,
    BlockInvoker,
    BlockRequest,
    BlockResult,
    StepCancelled,
    StepContext,
    StepFailed,
    StepRunner,
)
from handlers.agents.workflows.yaml_nodes import Issue, WorkflowValidationError

__all__ = [
    "AgentInvoker",
    "AgentRequest",
    "AgentResult",
    "BlockInvoker",
    "BlockRequest",
    "BlockResult",
    "EvaluationError",
    "ExecutionJournal",
    "Expression",
    "ExpressionError",
    "HttpStepRunner",
    "InputDefinition",
    "InputError",
    "Issue",
    "MemoryJournal",
    "RetryPolicy",
    "StepCancelled",
    "StepContext",
    "StepDefinition",
    "StepFailed",
    "StepRecord",
    "StepRunner",
    "StepStatus",
    "WorkflowDefinition",
    "WorkflowEngine",
    "WorkflowOutcome",
    "WorkflowState",
    "WorkflowStatus",
    "WorkflowValidationError",
    "bind_inputs",
    "compile_expression",
    "evaluate",
    "parse_workflow",
    "standard_runners",
]
