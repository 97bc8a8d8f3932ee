"""Finding and ending every process of a run's process group (its session).

This is how unsandboxed runs end (``AGENTS_SANDBOX=none``). A process that starts a session
of its own (``setsid``) leaves the group and escapes it; sandboxed runs end by their PID
namespace instead (``pid_namespace.py``), which nothing escapes.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator

POLL_SECONDS = 0.05
KILL_WAIT_SECONDS = 2.0


DEAD_STATES = (b"Z", b"X")


def stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, parent, group…);
    None when the process is gone. Raises OSError when /proc cannot be read otherwise."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            stat = stat_file.read()
    except FileNotFoundError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()


def living_processes() -> Iterator[tuple[int, list[bytes]]]:
    """(pid, :func:`stat_fields`) of every process that is not a zombie."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fields = stat_fields(int(name))
        except OSError:
            continue
        if fields and fields[0] not in DEAD_STATES:
            yield int(name), fields


def process_alive(pid: int) -> bool:
    """True while ``pid`` is a process that is not a zombie."""
    try:
        fields = stat_fields(pid)
    except OSError:
        return signal_alive(pid)
    return fields is not None and len(fields) > 0 and fields[0] not in DEAD_STATES


def signal_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ProcessGroup:
    """How the supervisor ends an unsandboxed run, given its leader (the group id)."""

    async def end(self, leader: int, grace_seconds: float) -> None:
        await end_process_group(leader, grace_seconds)

    async def kill(self, leader: int) -> None:
        await kill_process_group(leader)


def living_members(pgid: int) -> list[int]:
    """Process ids of the group's members that are not zombies.

    Reads /proc, since orphaned zombies still count for ``killpg(pgid, 0)`` where nothing reaps
    them; without /proc, falls back to that probe.
    """
    if not os.path.isdir("/proc"):
        return [pgid] if signal_group(pgid, 0) else []
    return [pid for pid, fields in living_processes() if len(fields) > 2 and int(fields[2]) == pgid]


def signal_group(pgid: int, signum: int) -> bool:
    """Send ``signum`` to the group; False when the group no longer exists."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:  # only a stranger could own the id now: the group is gone
        return False
    return True


async def end_process_group(pgid: int, grace_seconds: float) -> None:
    """SIGTERM every living member, SIGKILL those still alive after ``grace_seconds``, and
    return once none is left (or KILL_WAIT_SECONDS after the SIGKILL)."""
    if not await asyncio.to_thread(living_members, pgid):
        return
    signal_group(pgid, signal.SIGTERM)
    if await _wait_until_gone(pgid, grace_seconds):
        return
    await kill_process_group(pgid)


async def kill_process_group(pgid: int) -> None:
    """SIGKILL the group and return once none of its members is left alive (or after
    KILL_WAIT_SECONDS): the kernel ends killed processes asynchronously."""
    if signal_group(pgid, signal.SIGKILL):
        await _wait_until_gone(pgid, KILL_WAIT_SECONDS)


async def _wait_until_gone(pgid: int, seconds: float) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while await asyncio.to_thread(living_members, pgid):
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(POLL_SECONDS)
    return True
