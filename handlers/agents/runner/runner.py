"""run(): one execution of an agent's program, from its files to a RunOutcome."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import ParamSpec, TypeVar

from handlers.agents.runner.cancel import CancelSignal
from handlers.agents.runner.egress_proxy import EgressProxy
from handlers.agents.runner.environment import build_environment
from handlers.agents.runner.outputs import CollectedOutput, collect_output
from handlers.agents.runner.process import ProcessResult, run_process
from handlers.agents.runner.rlimits import describe_limit, limit_reached
from handlers.agents.runner.run_directory import (
    RunDirectory,
    create_run_directory,
    fill_run_directory,
    remove_run_directory,
)
from handlers.agents.runner.sandbox import Sandbox
from handlers.agents.runner.spec import RunOutcome, RunSpec, RunStatus

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

MAX_STDERR_IN_ERROR = 2000
"""Characters of the stderr tail quoted in the error of a failed run."""
SIGNAL_STATUS_BASE = 128
MAX_SIGNAL = 64
PRLIMIT_EXEC_FAILED = 127
PRLIMIT_EXEC_PREFIX = "prlimit: failed to execute "
PROXY_SOCKET_NAME = "proxy.sock"
"""In the run directory's root, which the program does not see; bound into the sandbox."""


async def run(
    spec: RunSpec,
    cancel: CancelSignal,
    *,
    sandbox: Sandbox,
    work_root: Path | None = None,
) -> RunOutcome:
    """Run ``spec`` in ``sandbox``, in a fresh directory under ``work_root`` (default: the
    sandbox's choice, a private folder of the system temporary directory), and return how it
    ended. The directory is always removed; a failure of the run is an outcome, not an
    exception. Cancelling the calling task kills every process of the run."""
    clock = _Clock()
    try:  # one trip to a thread: the directory made and filled
        directory = await asyncio.to_thread(_new_directory, sandbox, work_root, spec)
    except (ValueError, OSError) as exc:  # the work folder cannot be used (WorkRootError), a
        # full disk, an unsafe or conflicting file name, input JSON that cannot be written
        outcome = clock.outcome("failed", None, f"cannot prepare the run: {exc}")
    else:
        removed = _Removal(directory)
        try:
            outcome = await _run_in(directory, spec, cancel, clock, sandbox, removed)
        finally:
            if not removed.done:
                await asyncio.to_thread(removed.remove)
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
    directory: RunDirectory,
    spec: RunSpec,
    cancel: CancelSignal,
    clock: _Clock,
    sandbox: Sandbox,
    removed: _Removal,
) -> RunOutcome:
    try:
        environment = build_environment(spec.execution_id, sandbox.visible(directory), spec.env)
    except (ValueError, OSError) as exc:
        return clock.outcome("failed", None, f"cannot prepare the run: {exc}")
    if cancel.requested:
        return clock.outcome("cancelled", None, "cancelled")
    proxy = None
    if spec.network == "outbound" and sandbox.isolated:
        proxy = EgressProxy(sandbox.egress, directory.root / PROXY_SOCKET_NAME,
                            label=spec.execution_id)  # fmt: skip
    try:
        if proxy is not None:
            await proxy.start()
        proxy_socket = proxy.path if proxy is not None else None
        launch = sandbox.launch(spec, directory, environment, proxy_socket)
        result = await run_process(
            launch,
            log_limit=spec.limits.max_log_bytes,
            timeout_seconds=spec.timeout_seconds,
            cancel=cancel,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return clock.outcome("failed", None, f"cannot start {spec.command[0]!r}: {exc}")
    finally:
        if proxy is not None:
            await asyncio.shield(proxy.close())
    if sandbox.isolated:
        result = _signal_from_exit_status(result)
    failure = _start_failure(result)
    if failure is not None:
        return clock.outcome("failed", None, f"cannot start {spec.command[0]!r}: {failure}", result)
    collected = await asyncio.to_thread(removed.after, collect_output, directory.output,
                                        spec.limits, spec.output_schema)  # fmt: skip
    status, error = _verdict(result, spec)
    if collected.error is not None:
        error = collected.error if error is None else f"{error}; {collected.error}"
        if status == "completed":
            status = "failed"
    outcome = clock.outcome(status, result.return_code, error, result, collected)
    return dataclasses.replace(outcome, timed_out=result.ended_by == "timeout")


@dataclass
class _Removal:
    """The run directory's removal: at once after the outputs are read (in the same trip to
    a thread), or by :func:`run` on any other way out."""

    directory: RunDirectory
    done: bool = False

    def after(self, read: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``read(*args, **kwargs)``, then the directory removed."""
        try:
            return read(*args, **kwargs)
        finally:
            self.remove()

    def remove(self) -> None:
        self.done = True
        try:
            remove_run_directory(self.directory)
        except OSError as exc:
            logger.error("cannot remove run directory %s: %s", self.directory.root, exc)


def _new_directory(sandbox: Sandbox, work_root: Path | None, spec: RunSpec) -> RunDirectory:
    """The run's directory, made and filled (removed again when it cannot be filled)."""
    directory = create_run_directory(spec.execution_id, sandbox.work_root(work_root))
    try:
        fill_run_directory(directory, spec.workspace, spec.input_json, spec.input_files)
        sandbox.prepare(directory)
    except BaseException:
        _Removal(directory).remove()
        raise
    return directory


def _start_failure(result: ProcessResult) -> str | None:
    """Why the program never started (prlimit could not execute it, or bwrap could not set
    the sandbox up), or None when it ran."""
    stderr = result.stderr.strip()
    if result.return_code == PRLIMIT_EXEC_FAILED and stderr.startswith(PRLIMIT_EXEC_PREFIX):
        return stderr.partition(": ")[2].split(": ", 1)[-1]
    if result.return_code == 1 and stderr.startswith("bwrap: ") and "\n" not in stderr:
        return f"the sandbox could not be set up: {stderr}"
    return None


def _signal_from_exit_status(result: ProcessResult) -> ProcessResult:
    """bwrap reports a program killed by signal N as exit status 128 + N, as shells do."""
    code = result.return_code
    if code is not None and SIGNAL_STATUS_BASE < code <= SIGNAL_STATUS_BASE + MAX_SIGNAL:
        return dataclasses.replace(result, return_code=SIGNAL_STATUS_BASE - code)
    return result


def _verdict(result: ProcessResult, spec: RunSpec) -> tuple[RunStatus, str | None]:
    if result.ended_by == "cancel":
        return "cancelled", "cancelled"
    code = result.return_code
    signum = -code if code is not None and code < 0 else None
    limit = limit_reached(signum, result.stderr)
    hit = f" ({describe_limit(limit, spec)} reached)" if limit is not None else ""
    if result.ended_by == "timeout":
        return "failed", f"timed out after {spec.timeout_seconds:g} s{hit}"
    if code == 0:
        return "completed", None
    if code is None:
        reason = "the program's exit status is unknown"
    elif code > 0:
        reason = f"exit code {code}"
    else:
        reason = _signal_reason(-code, limit is None)
    stderr = result.stderr.strip()[-MAX_STDERR_IN_ERROR:]
    reason += hit
    return "failed", f"{reason}: {stderr}" if stderr else reason


def _signal_reason(signum: int, unexplained: bool) -> str:
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = str(signum)
    reason = f"killed by signal {name}"
    if signum == signal.SIGKILL and unexplained:
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
