"""run(): one execution of an agent's program, from its files to a RunOutcome."""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from handlers.agents.execution.cancel import CancelSignal
from handlers.agents.execution.environment import build_environment
from handlers.agents.execution.outputs import CollectedOutput, collect_output
from handlers.agents.execution.process import ProcessResult, run_process
from handlers.agents.execution.run_directory import (
    RunDirectory,
    create_run_directory,
    fill_run_directory,
    remove_run_directory,
)
from handlers.agents.execution.sizes import format_bytes
from handlers.agents.execution.spec import RunOutcome, RunSpec, RunStatus

logger = logging.getLogger(__name__)

MAX_STDERR_IN_ERROR = 2000
"""Characters of the stderr tail quoted in the error of a failed run."""


async def run(spec: RunSpec, cancel: CancelSignal, *, work_root: Path | None = None) -> RunOutcome:
    """Run ``spec`` in a fresh directory under ``work_root`` (default: the system temporary
    directory) and return how it ended. The directory is always removed; a failure of the run
    is an outcome, not an exception. Cancelling the calling task kills the program's group."""
    clock = _Clock()
    directory = await asyncio.to_thread(create_run_directory, spec.execution_id, work_root)
    try:
        outcome = await _run_in(directory, spec, cancel, clock)
    finally:
        try:
            await asyncio.to_thread(remove_run_directory, directory)
        except OSError as exc:
            logger.error("cannot remove run directory %s: %s", directory.root, exc)
    logger.info(
        "execution %s %s exit_code=%s duration=%.2fs error=%s",
        spec.execution_id,
        outcome.status,
        outcome.exit_code,
        outcome.duration_seconds,
        (outcome.error or "").splitlines()[0] if outcome.error else None,
    )
    return outcome


async def _run_in(
    directory: RunDirectory, spec: RunSpec, cancel: CancelSignal, clock: _Clock
) -> RunOutcome:
    try:
        await asyncio.to_thread(
            fill_run_directory, directory, spec.workspace, spec.input_json, spec.input_files
        )
        environment = build_environment(spec.execution_id, directory, spec.env)
    except (ValueError, OSError) as exc:
        return clock.outcome("failed", None, f"cannot prepare the run: {exc}")
    if cancel.requested:
        return clock.outcome("cancelled", None, "cancelled")
    try:
        result = await run_process(
            spec.command,
            cwd=directory.workspace,
            env=environment,
            limits=spec.limits,
            timeout_seconds=spec.timeout_seconds,
            cancel=cancel,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return clock.outcome("failed", None, f"cannot start {spec.command[0]!r}: {exc}")
    collected = await asyncio.to_thread(
        collect_output, directory.output, spec.limits, spec.output_schema
    )
    status, error = _verdict(result, spec)
    if collected.error is not None:
        error = collected.error if error is None else f"{error}; {collected.error}"
        if status == "completed":
            status = "failed"
    return clock.outcome(status, result.return_code, error, result, collected)


def _verdict(result: ProcessResult, spec: RunSpec) -> tuple[RunStatus, str | None]:
    if result.ended_by == "cancel":
        return "cancelled", "cancelled"
    if result.ended_by == "timeout":
        return "failed", f"timed out after {spec.timeout_seconds:g} s"
    code = result.return_code
    if code == 0:
        return "completed", None
    if code is None:
        reason = "the program's exit status is unknown"
    elif code > 0:
        reason = f"exit code {code}"
    else:
        reason = _signal_reason(-code, spec)
    stderr = result.stderr.strip()[-MAX_STDERR_IN_ERROR:]
    return "failed", f"{reason}: {stderr}" if stderr else reason


def _signal_reason(signum: int, spec: RunSpec) -> str:
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = str(signum)
    reason = f"killed by signal {name}"
    if signum == signal.SIGXFSZ:
        reason += f" (a file exceeded {format_bytes(spec.limits.max_output_bytes)})"
    elif signum == signal.SIGKILL:
        reason += " (possibly out of memory)"
    return reason


@dataclass
class _Clock:
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    started: float = field(default_factory=time.monotonic)

    def outcome(
        self,
        status: RunStatus,
        exit_code: int | None,
        error: str | None,
        result: ProcessResult | None = None,
        collected: CollectedOutput | None = None,
    ) -> RunOutcome:
        collected = collected or CollectedOutput()
        return RunOutcome(
            status=status,
            exit_code=exit_code,
            error=error,
            started_at=self.started_at,
            finished_at=datetime.now(UTC),
            duration_seconds=time.monotonic() - self.started,
            output_json=collected.output_json,
            schema_valid=collected.schema_valid,
            schema_errors=collected.schema_errors,
            output_files=collected.files,
            issues_md=collected.issues_md,
            trace=collected.trace,
            stdout_tail=result.stdout if result else "",
            stderr_tail=result.stderr if result else "",
        )
