"""The unisolated "sandbox" of ``AGENTS_SANDBOX=none``: the service's user and view.

For trusted single-user development only: the program runs as the service's user, with its
files, environment and network. Its resource limits still apply (``prlimit``) and its process
group is ended with the run (a process that starts a session of its own escapes it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from handlers.agents.egress import EgressPolicy
from handlers.agents.runner.process_group import ProcessGroup
from handlers.agents.runner.rlimits import find_prlimit, prlimit_command
from handlers.agents.runner.run_directory import RunDirectory
from handlers.agents.runner.sandbox import Launch, SandboxUnavailable
from handlers.agents.runner.spec import RunSpec

__all__ = ["Unsandboxed"]


@dataclass
class Unsandboxed:
    """The program runs as the service's user, in a session of its own (``AGENTS_SANDBOX=none``)."""

    prlimit: str = "prlimit"
    egress: EgressPolicy = field(default_factory=EgressPolicy)
    isolated: bool = False

    def describe(self) -> str:
        return "as this service's user, with its files, environment and network"

    def work_root(self, requested: Path | None) -> Path | None:
        return requested

    def prepare(self, directory: RunDirectory) -> None:
        del directory

    def visible(self, directory: RunDirectory) -> RunDirectory:
        return directory

    def launch(
        self,
        spec: RunSpec,
        directory: RunDirectory,
        environment: Mapping[str, str],
        proxy_socket: Path | None,
    ) -> Launch:
        del proxy_socket  # the program shares the service's network
        return Launch(
            argv=[*prlimit_command(self.prlimit, spec), *spec.command],
            env=dict(environment),
            cwd=directory.workspace,
            containment=ProcessGroup(),
            new_session=True,
        )

    def probe(self) -> None:
        found = find_prlimit()
        if found is None:
            raise SandboxUnavailable("prlimit (util-linux) is not installed")
        self.prlimit = found
