"""Starting the agent's program under resource limits and supervising it to its end."""

from __future__ import annotations

import asyncio
import logging
import resource
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from handlers.agents.execution.cancel import CancelSignal
from handlers.agents.execution.process_group import end_process_group, kill_process_group
from handlers.agents.execution.spec import RunLimits
from handlers.agents.execution.tail_buffer import TailBuffer

logger = logging.getLogger(__name__)

TERMINATE_GRACE_SECONDS = 2.0
DRAIN_SECONDS = 2.0
"""How long to wait for the pipes to close once the group is gone (an escaped grandchild may
hold them open)."""
REAP_SECONDS = 5.0
"""Upper bound on waiting for the ended program to be reaped (normally immediate)."""

EndedBy = Literal["exit", "timeout", "cancel"]


@dataclass(frozen=True)
class ProcessResult:
    ended_by: EndedBy
    return_code: int | None
    stdout: str
    stderr: str


class _TailingProtocol(asyncio.SubprocessProtocol):
    """Feeds stdout and stderr into bounded tails; reports exit and the closing of all pipes."""

    def __init__(self, log_limit: int, loop: asyncio.AbstractEventLoop) -> None:
        self.stdout = TailBuffer(log_limit)
        self.stderr = TailBuffer(log_limit)
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        (self.stdout if fd == 1 else self.stderr).append(data)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


def rlimits_for(limits: RunLimits) -> list[tuple[int, int]]:
    """(resource, value) pairs applied to the program; never above the current hard limits."""
    wanted = [
        (resource.RLIMIT_AS, limits.max_memory_bytes),
        (resource.RLIMIT_FSIZE, limits.max_output_bytes),
        (resource.RLIMIT_CORE, 0),
    ]
    if limits.max_processes is not None:
        wanted.append((resource.RLIMIT_NPROC, limits.max_processes))
    applied = []
    for kind, value in wanted:
        _, hard = resource.getrlimit(kind)
        applied.append((kind, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return applied


def _limits_applier(rlimits: list[tuple[int, int]]) -> Callable[[], None]:
    def apply() -> None:  # runs in the forked child: no allocation-heavy work, no locks
        for kind, value in rlimits:
            resource.setrlimit(kind, (value, value))

    return apply


async def run_process(
    command: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    limits: RunLimits,
    timeout_seconds: float,
    cancel: CancelSignal,
) -> ProcessResult:
    """Run ``command`` in a new session until it exits, times out or is cancelled.

    On timeout or cancel the whole process group gets SIGTERM, then SIGKILL after
    TERMINATE_GRACE_SECONDS; members still alive after the program exits are ended the same way.
    Raises OSError or subprocess.SubprocessError when the program cannot be started.
    """
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _TailingProtocol(limits.max_log_bytes, loop),
        *command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        preexec_fn=_limits_applier(rlimits_for(limits)),
    )
    pgid = transport.get_pid()
    try:
        ended_by = await _wait_for_end(protocol.exited, cancel, timeout_seconds)
        await end_process_group(pgid, TERMINATE_GRACE_SECONDS)
        for waited, seconds, problem in (
            (protocol.exited, REAP_SECONDS, "not reaped"),
            (protocol.closed, DRAIN_SECONDS, "pipes still open"),
        ):
            try:
                await asyncio.wait_for(asyncio.shield(waited), seconds)
            except TimeoutError:
                logger.warning("execution process %s after its group ended: pid=%d", problem, pgid)
    finally:
        try:
            if transport.get_returncode() is None:  # interrupted (the caller was cancelled)
                # Shielded: a second cancel still lets the kill finish.
                await asyncio.shield(kill_process_group(pgid))
        finally:
            transport.close()
    return ProcessResult(
        ended_by=ended_by,
        return_code=transport.get_returncode(),
        stdout=protocol.stdout.text(),
        stderr=protocol.stderr.text(),
    )


async def _wait_for_end(
    exited: asyncio.Future[None], cancel: CancelSignal, timeout_seconds: float
) -> EndedBy:
    cancel_wait = asyncio.ensure_future(cancel.wait())
    try:
        done, _ = await asyncio.wait(
            {exited, cancel_wait}, timeout=timeout_seconds, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        cancel_wait.cancel()
        await asyncio.wait({cancel_wait})
    if exited.done():
        return "exit"
    if cancel_wait in done:
        return "cancel"
    return "timeout"
