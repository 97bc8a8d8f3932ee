"""Ending a sandboxed run: every process of its PID namespace.

bubblewrap runs the program in a PID namespace of its own: the process the service starts is
bwrap's monitor, its only child is the namespace's init (pid 1 inside), and every process of the
run is a descendant of that init; an orphan (``setsid``, a double fork) is re-parented to it.
When the init dies the kernel kills every other process of the namespace, and nothing can
leave it, so killing the init ends the whole run. ``--die-with-parent`` makes the monitor and
the init die with the service's worker too (SIGKILL on a lost worker included).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal

from handlers.agents.runner.process_group import living_processes, process_alive

__all__ = ["PidNamespace", "children_of", "descendants_of"]

log = logging.getLogger(__name__)

POLL_SECONDS = 0.02
KILL_WAIT_SECONDS = 2.0
MAX_MEMBERS = 100_000


def children_of(pid: int) -> list[int]:
    """The living children of ``pid`` (none when it is gone)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as listing:
            found = [int(child) for child in listing.read().split()]
    except FileNotFoundError:
        return []
    except OSError:  # no CONFIG_PROC_CHILDREN: scan every process's parent
        found = _children_by_scan(pid)
    return [child for child in found if process_alive(child)]


def descendants_of(pid: int) -> list[int]:
    """Every living descendant of ``pid``, parents before their children."""
    found: list[int] = []
    pending = children_of(pid)
    while pending and len(found) < MAX_MEMBERS:
        member = pending.pop(0)
        found.append(member)
        pending.extend(children_of(member))
    return found


def _children_by_scan(parent: int) -> list[int]:
    return [
        pid for pid, fields in living_processes() if len(fields) > 1 and int(fields[1]) == parent
    ]


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


class PidNamespace:
    """How the supervisor ends a bubblewrap sandbox, given the pid of bwrap's monitor."""

    async def end(self, monitor: int, grace_seconds: float) -> None:
        """SIGTERM every process of the namespace but its init, SIGKILL the namespace once
        ``grace_seconds`` have passed with any of them alive; return once it is gone.

        Processes forked after the SIGTERM went out get none; they end with the namespace."""
        init = _init_of(monitor)  # one small /proc file: read here, not in a thread
        if init is None:
            return
        members = await asyncio.to_thread(descendants_of, init)
        for member in members:
            _signal(member, signal.SIGTERM)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_seconds
        while members and loop.time() < deadline:
            await asyncio.sleep(POLL_SECONDS)
            members = await asyncio.to_thread(children_of, init)
        await self.kill(monitor)

    async def kill(self, monitor: int) -> None:
        """SIGKILL the namespace's init (the kernel then kills every process in it) and the
        monitor; return once the init is dead (or after KILL_WAIT_SECONDS)."""
        init = _init_of(monitor)
        if init is not None:
            _signal(init, signal.SIGKILL)
        _signal(monitor, signal.SIGKILL)
        if init is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + KILL_WAIT_SECONDS
        while process_alive(init):
            if loop.time() >= deadline:
                log.warning(
                    "sandbox init %d still alive %g s after SIGKILL", init, KILL_WAIT_SECONDS
                )
                return
            await asyncio.sleep(POLL_SECONDS)


def _init_of(monitor: int) -> int | None:
    children = children_of(monitor)
    return children[0] if children else None
