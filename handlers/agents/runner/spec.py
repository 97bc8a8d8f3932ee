"""What a run is given (RunSpec, RunLimits) and what it produces (RunOutcome)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

RunStatus = Literal["completed", "failed", "cancelled"]
NetworkMode = Literal["none", "outbound"]
"""``none``: no network at all; ``outbound``: HTTP(S) through the run's egress proxy only."""
NETWORK_MODES: tuple[NetworkMode, ...] = ("none", "outbound")

MB = 1000 * 1000
GiB = 1024 * 1024 * 1024


@dataclass(frozen=True)
class RunLimits:
    """Resource bounds of one run; every size is in bytes."""

    max_output_bytes: int = 50 * MB
    """Sum of the sizes of every file under the output directory (also the largest file the
    program may write anywhere, through RLIMIT_FSIZE)."""
    max_output_files: int = 1000
    max_log_bytes: int = 1 * MB
    """Bytes of stdout and of stderr kept, each; the tail is kept when the program writes more."""
    max_memory_bytes: int = 2 * GiB
    """Address space of each process (RLIMIT_AS)."""
    max_processes: int = 256
    """Processes and threads of the run at once (RLIMIT_NPROC). Sandboxed, each run has a user
    namespace of its own, so the kernel counts it per run; unsandboxed it counts every process
    of the service's user, and root ignores it."""
    max_cpu_seconds: int | None = None
    """CPU time of each process (RLIMIT_CPU: SIGXCPU, then SIGKILL a second later); None: the
    run's timeout, rounded up."""
    max_file_bytes: int | None = None
    """Largest file any process may write (RLIMIT_FSIZE); None: ``max_output_bytes``."""
    max_open_files: int = 1024
    """Open file descriptors of each process (RLIMIT_NOFILE)."""

    def __post_init__(self) -> None:
        for name in (
            "max_output_bytes",
            "max_output_files",
            "max_log_bytes",
            "max_memory_bytes",
            "max_processes",
            "max_open_files",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        for name in ("max_cpu_seconds", "max_file_bytes"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive when set")

    @property
    def file_bytes(self) -> int:
        """The RLIMIT_FSIZE of the run's processes."""
        return self.max_output_bytes if self.max_file_bytes is None else self.max_file_bytes


@dataclass(frozen=True)
class RunSpec:
    """One execution of an agent's program; see README.md for the contract with the program."""

    execution_id: str
    command: tuple[str, ...]
    """Program and arguments, run without a shell (split a string entrypoint with shlex)."""
    workspace: Mapping[str, bytes] = field(default_factory=dict)
    """The agent's live files: safe relative path -> content."""
    input_json: object | None = None
    input_files: Mapping[str, bytes] = field(default_factory=dict)
    """Uploaded input files: form field or file name (a safe relative path) -> content."""
    output_schema: Mapping[str, object] | None = None
    timeout_seconds: float = 600.0
    env: Mapping[str, str] = field(default_factory=dict)
    limits: RunLimits = field(default_factory=RunLimits)
    network: NetworkMode = "none"
    """What the program may reach (sandboxed runs; unsandboxed ones share the host's network)."""

    def __post_init__(self) -> None:
        if not self.command:
            raise ValueError("command must not be empty")
        if not self.timeout_seconds > 0:
            raise ValueError("timeout_seconds must be positive")
        if self.network not in NETWORK_MODES:
            raise ValueError(f"network must be one of {', '.join(NETWORK_MODES)}")

    @property
    def cpu_seconds(self) -> int:
        """The RLIMIT_CPU of the run's processes."""
        if self.limits.max_cpu_seconds is not None:
            return self.limits.max_cpu_seconds
        return max(1, math.ceil(self.timeout_seconds))


@dataclass(frozen=True)
class RunOutcome:
    """The result of a run. ``error`` says why a run failed or was cancelled, else None."""

    status: RunStatus
    exit_code: int | None
    """The process's return code (negative: killed by that signal); None if it never started."""
    error: str | None
    started_at: datetime
    finished_at: datetime
    duration_seconds: float
    output_json: object | None = None
    schema_valid: bool | None = None
    """None when no output schema was given (or it could not be used), else the verdict."""
    schema_errors: list[str] = field(default_factory=list)
    output_files: dict[str, bytes] = field(default_factory=dict)
    """Files under the output directory other than output.json, issues.md and trace.jsonl."""
    issues_md: str | None = None
    trace: list[dict[str, object]] = field(default_factory=list)
    stdout_tail: str = ""
    stderr_tail: str = ""
    timed_out: bool = False
    """Whether the run was stopped for running past ``timeout_seconds`` (``status`` failed)."""
