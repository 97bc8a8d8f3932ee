"""Starting the agent's program (as its sandbox says) and supervising it to its end."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
from dataclasses import dataclass
from typing import Literal

from handlers.agents.runner.cancel import CancelSignal
from handlers.agents.runner.sandbox import Launch
from handlers.agents.runner.tail_buffer import TailBuffer

logger = logging.getLogger(__name__)

__all__ = ["ProcessResult", "prefer_pidfd_child_watcher", "run_process"]

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


def prefer_pidfd_child_watcher() -> bool:
    """Have asyncio wait for the programs of this process with pidfds (Linux 5.3 and later):
    Python 3.11's default watcher starts a thread per program only to wait for it. Call it in
    a process's main thread before its event loop starts; False (the default kept) where
    pidfds are unavailable."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    asyncio.set_child_watcher(asyncio.PidfdChildWatcher())
    return True


async def run_process(
    launch: Launch,
    *,
    log_limit: int,
    timeout_seconds: float,
    cancel: CancelSignal,
) -> ProcessResult:
    """Run ``launch`` until it exits, times out or is cancelled.

    On timeout or cancel every process of the run gets SIGTERM, then SIGKILL after
    TERMINATE_GRACE_SECONDS; processes left behind when the program exits are ended the same
    way (``launch.containment`` knows how to find them). Raises OSError or
    subprocess.SubprocessError when the program cannot be started.
    """
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _TailingProtocol(log_limit, loop),
        *launch.argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=launch.cwd,
        env=launch.env,
        start_new_session=launch.new_session,
    )
    pid = transport.get_pid()
    containment = launch.containment
    try:
        ended_by = await _wait_for_end(protocol.exited, cancel, timeout_seconds)
        await containment.end(pid, TERMINATE_GRACE_SECONDS)
        for waited, seconds, problem in (
            (protocol.exited, REAP_SECONDS, "not reaped"),
            (protocol.closed, DRAIN_SECONDS, "pipes still open"),
        ):
            if waited.done():  # the usual case: nothing to wait for
                continue
            try:
                await asyncio.wait_for(asyncio.shield(waited), seconds)
            except TimeoutError:
                logger.warning("execution process %s after its run ended: pid=%d", problem, pid)
    finally:
        try:
            if transport.get_returncode() is None:  # interrupted (the caller was cancelled)
                # Shielded: a second cancel still lets the kill finish.
                await asyncio.shield(containment.kill(pid))
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
