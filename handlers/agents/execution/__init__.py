"""Runs an agent's program in a sandboxed temporary directory; see README.md for the contract.

Knows nothing of the database or HTTP: the server and the workers call ``run`` with a
``RunSpec`` and store the ``RunOutcome``.
"""

from handlers.agents.execution.cancel import CancelSignal
from handlers.agents.execution.runner import run
from handlers.agents.execution.schemas import InvalidSchemaError, check_schema, validate_input
from handlers.agents.execution.spec import RunLimits, RunOutcome, RunSpec, RunStatus

__all__ = [
    "CancelSignal",
    "InvalidSchemaError",
    "RunLimits",
    "RunOutcome",
    "RunSpec",
    "RunStatus",
    "check_schema",
    "run",
    "validate_input",
]
