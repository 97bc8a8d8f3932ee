"""What a run is given (RunSpec, RunLimits) and what it produces (RunOutcome)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

RunStatus = Literal["completed", "failed", "cancelled"]

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
    max_processes: int | None = None
    """RLIMIT_NPROC when set. The kernel counts it per user, not per run, and root ignores it."""

    def __post_init__(self) -> None:
        for name in ("max_output_bytes", "max_output_files", "max_log_bytes", "max_memory_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if self.max_processes is not None and self.max_processes <= 0:
            raise ValueError("max_processes must be positive when set")


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

    def __post_init__(self) -> None:
        if not self.command:
            raise ValueError("command must not be empty")
        if not self.timeout_seconds > 0:
            raise ValueError("timeout_seconds must be positive")


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
