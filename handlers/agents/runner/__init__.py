"""Runs an agent's program in a sandbox (bubblewrap) and a temporary directory; see README.md.

Knows nothing of the database or HTTP: the server and the workers call ``run`` with a
``RunSpec`` and store the ``RunOutcome``.
"""

from handlers.agents.runner.bubblewrap import Bubblewrap
from handlers.agents.runner.cancel import CancelSignal
from handlers.agents.runner.isolation import make_sandbox
from handlers.agents.runner.process import prefer_pidfd_child_watcher
from handlers.agents.runner.runner import run
from handlers.agents.runner.sandbox import Sandbox, SandboxUnavailable
from handlers.agents.runner.schemas import InvalidSchemaError, check_schema, validate_input
from handlers.agents.runner.spec import (
    NETWORK_MODES,
    NetworkMode,
    RunLimits,
    RunOutcome,
    RunSpec,
    RunStatus,
)
from handlers.agents.runner.unsandboxed import Unsandboxed

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
    "prefer_pidfd_child_watcher",
    "run",
    "validate_input",
]
