"""Runs an agent's program in a sandbox (bubblewrap) and a temporary directory; see README.md.

Knows nothing of the database or HTTP: the server and the workers call ``run`` with a
``RunSpec`` and store the ``RunOutcome``.
"""

from handlers.agents.execution.bubblewrap import Bubblewrap
from handlers.agents.execution.cancel import CancelSignal
from handlers.agents.execution.isolation import make_sandbox
from handlers.agents.execution.runner import run
from handlers.agents.execution.sandbox import Sandbox, SandboxUnavailable
from handlers.agents.execution.schemas import InvalidSchemaError, check_schema, validate_input
from handlers.agents.execution.spec import (
    NETWORK_MODES,
    NetworkMode,
    RunLimits,
    RunOutcome,
    RunSpec,
    RunStatus,
)
from handlers.agents.execution.unsandboxed import Unsandboxed

__all__ = [
    "NETWORK_MODES",
    "Bubblewrap",
    "CancelSignal",
    "InvalidSchemaError",
    "NetworkMode",
    "RunLimits",
    "RunOutcome",
    "RunSpec",
    "RunStatus",
    "Sandbox",
    "SandboxUnavailable",
    "Unsandboxed",
    "check_schema",
    "make_sandbox",
    "run",
    "validate_input",
]
