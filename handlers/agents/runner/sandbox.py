"""What the runner needs of a sandbox: the :class:`Sandbox` protocol and :class:`Launch`.

Two sandboxes implement it: :class:`~handlers.agents.runner.bubblewrap.Bubblewrap` (every
program in namespaces of its own; the default) and
:class:`~handlers.agents.runner.unsandboxed.Unsandboxed` (``AGENTS_SANDBOX=none``, for
trusted single-user development only); :func:`~handlers.agents.runner.isolation.make_sandbox`
picks and checks one. See README.md ("Sandboxes") for the whole picture.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from handlers.agents.egress import EgressPolicy
from handlers.agents.runner.run_directory import RunDirectory
from handlers.agents.runner.spec import RunSpec

__all__ = ["Containment", "Launch", "Sandbox", "SandboxUnavailable"]


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be set up on this machine; the message says what is missing."""


class Containment(Protocol):
    """How the supervisor ends every process of a run, given the pid it started."""

    async def end(self, pid: int, grace_seconds: float) -> None: ...

    async def kill(self, pid: int) -> None: ...


@dataclass
class Launch:
    """How to start one run's program: what :func:`process.run_process` executes."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    containment: Containment
    new_session: bool = False


class Sandbox(Protocol):
    """What the runner asks of the isolation it is given."""

    isolated: bool
    egress: EgressPolicy

    def describe(self) -> str:
        """What programs run as, for the start-up log line."""
        ...

    def work_root(self, requested: Path | None) -> Path | None:
        """Where run directories are made (``requested``, or the sandbox's own default)."""
        ...

    def prepare(self, directory: RunDirectory) -> None:
        """Make the filled run directory usable by the program (blocking)."""
        ...

    def visible(self, directory: RunDirectory) -> RunDirectory:
        """The run directory's paths as the program sees them."""
        ...

    def launch(
        self,
        spec: RunSpec,
        directory: RunDirectory,
        environment: Mapping[str, str],
        proxy_socket: Path | None,
    ) -> Launch:
        """The command starting ``spec``'s program; ``proxy_socket`` is the run's egress proxy
        when the program has ``network: outbound``."""
        ...

    def probe(self) -> None:
        """Raise :class:`SandboxUnavailable` unless a program can run in this sandbox."""
        ...
