"""When a store's upkeep runs, in which task, and how it stops; what it measures on disk.

Upkeep (for LanceDB: compaction of small fragments, pruning of old table versions, index
refresh) runs in one background task per store, in rounds. A round starts once writes pause
for ``delay`` seconds or as soon as ``writes`` writes wait for it, but never sooner than
``interval`` seconds after the previous round started, nor than 4 times the previous round's
duration after it ended (upkeep takes at most a fifth of the time, however large the table:
a compaction rewrites all of a table under a million rows). A round may also ask for a
follow-up round at a given time without any write (LanceDB: to remove, once they are older
than the retention, the versions it had to keep), so a store that stops receiving writes
shrinks back on its own, not only at a later write.

The space a store takes once the follow-up round has run is its live data and indexes
(0.7-0.8 x the Arrow size of the live chunks after 2,000 one-sentence uploads and 500 deletes,
tests/rag/stores/test_store_upkeep.py). While writes keep coming it also holds what the
versions of the last ``retention`` seconds refer to: the fragments each write added, one
manifest per version (listing every fragment), and the copies compactions replaced. That is
why the retention is seconds: at 50-80 writes a second of one-sentence documents, the store
peaked at 91 x its live data with 10 s and 422 x with 60 s (2.8 x with 0).

Stopping: :meth:`UpkeepScheduler.stop` lets a round that is running finish (a LanceDB commit
is never cut in half), up to a grace period, and ends the task at once between rounds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "RETRY_AFTER_FAILURE",
    "BUSY_FACTOR",
    "STOP_GRACE",
    "UPKEEP_DELAY",
    "UPKEEP_INTERVAL",
    "UPKEEP_WRITES",
    "VERSION_RETENTION",
    "DiskUsage",
    "UpkeepPolicy",
    "UpkeepScheduler",
    "disk_usage",
]

log = logging.getLogger(__name__)

VERSION_RETENTION = 10.0
"""Seconds a LanceDB table version is kept once it is not the latest, counted from when it
was written (RAG_STORE_VERSION_RETENTION).

This process never needs an old version: its own searches run again on the new version when
upkeep removed the files under them, and its writes commit on top of the latest one. What old
versions protect is another process reading the same directory (a ``lancedb`` session, a
backup tool): a query of theirs that started on a version upkeep replaced has this long to
finish, above the milliseconds to seconds a query takes (LanceDB warns that 0 makes such
readers fail). Longer costs space while writes come (see the module docstring): LanceDB's own
default (7 days) and the hour used before kept every copy: 5.0 GB for 33.8 MB of live chunks
after 5,183 uploads."""

UPKEEP_WRITES = 20
"""Writes after which a round starts without waiting for a pause (RAG_STORE_UPKEEP_WRITES).
LanceDB's advice: optimize after about 20 modifications (rows not yet indexed are searched
exhaustively, so a write is found at once either way; only their cost grows)."""

UPKEEP_DELAY = 1.0
"""Seconds without a write after which a round starts (the last writes are indexed soon)."""

UPKEEP_INTERVAL = 1.0
"""Least seconds from one round's start to the next one's (RAG_STORE_UPKEEP_INTERVAL); rounds
are also spaced by :data:`BUSY_FACTOR` times their duration."""

BUSY_FACTOR = 4.0
"""A round starts no sooner than this many times the previous round's duration after it
ended: upkeep takes at most 1 / (1 + BUSY_FACTOR) of the time, and on a large table, where a
compaction rewrites much, fewer rewritten copies are kept for the retention."""

RETRY_AFTER_FAILURE = 30.0
"""Seconds after a failed round (logged) before the next one, when no write asks sooner."""

STOP_GRACE = 30.0
"""Seconds :meth:`UpkeepScheduler.stop` waits for a running round before cancelling it."""


@dataclass(frozen=True)
class UpkeepPolicy:
    """When rounds run (see the module docstring) and how long old versions are kept."""

    retention: float = VERSION_RETENTION
    writes: int = UPKEEP_WRITES
    delay: float = UPKEEP_DELAY
    interval: float = UPKEEP_INTERVAL

    def __post_init__(self) -> None:
        if min(self.retention, self.delay, self.interval) < 0 or self.writes < 1:
            raise ValueError(
                "upkeep needs retention, delay and interval >= 0 and writes >= 1, got "
                f"{self.retention}, {self.delay}, {self.interval} and {self.writes}"
            )


@dataclass(frozen=True)
class DiskUsage:
    """What a set of directories holds: bytes allocated on disk (as ``du`` counts them) and
    regular files."""

    bytes: int
    files: int


def disk_usage(paths: Iterable[Path]) -> DiskUsage:
    """Blocking: the files under ``paths`` (missing ones count 0). Files that disappear while
    it walks (a concurrent upkeep round removing them) are skipped."""
    total = files = 0
    pending = [str(path) for path in paths]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
                    files += 1
            except FileNotFoundError:
                continue
    return DiskUsage(total, files)


Round = Callable[[int], Awaitable[float | None]]
"""One upkeep round, given the writes it follows (0: a follow-up); the seconds after which
it wants a follow-up round, or None."""


class UpkeepScheduler:
    """Runs ``round`` in one background task of the running loop when ``policy`` says so.

    Only the event loop's thread calls its methods; the round itself must not block it."""

    def __init__(self, round: Round, policy: UpkeepPolicy, name: str) -> None:
        self.policy = policy
        self.name = name
        self._round = round
        self._task: asyncio.Task[None] | None = None
        self._writes = 0  # writes since the last round started
        self._last_write = 0.0  # time.monotonic() of the latest of them
        self._next_round = -float("inf")  # time.monotonic() before which no round starts
        self._follow_up: float | None = None  # time.monotonic() a follow-up round is due
        self._running = False  # a round is in progress
        self._stopping = False
        self._idle_waiters = 0  # wait_idle() calls in progress: no delay, no interval
        self._wake = asyncio.Event()  # set when a decision above may change
        self._changed = asyncio.Condition()  # notified when a round ends

    @property
    def running(self) -> bool:
        """Whether a round is in progress now."""
        return self._running

    def wrote(self) -> None:
        """Counts a write (or anything else upkeep should follow, such as rows an earlier
        process left unindexed): a round follows as the policy says."""
        if self._stopping:
            return
        self._writes += 1
        self._last_write = time.monotonic()
        self._wake.set()  # the next round may now be due sooner than the task waits for
        self._ensure_task()

    async def wait_idle(self) -> None:
        """Runs a round for the writes counted so far now (no delay, no interval) and waits
        until no round is due or running. A follow-up round is not waited for."""
        self._idle_waiters += 1
        self._wake.set()
        try:
            async with self._changed:
                await self._changed.wait_for(self._idle)
        finally:
            self._idle_waiters -= 1

    def _idle(self) -> bool:
        task = self._task
        alive = task is not None and not task.done()
        return not alive or not (self._writes or self._running)

    async def stop(self, grace: float = STOP_GRACE) -> None:
        """Ends the task: at once between rounds; after the running round otherwise (that
        round is cancelled after ``grace`` seconds). Later writes start no round."""
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        if task is None:
            return
        if not self._running:
            task.cancel()
        done, _ = await asyncio.wait({task}, timeout=grace)
        if not done:
            log.warning(
                "%s upkeep still running after %.0f s at close: cancelled", self.name, grace
            )
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        async with self._changed:
            self._changed.notify_all()

    def _ensure_task(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"{self.name}-upkeep"
            )

    def _start_at(self) -> float | None:
        """When the next round may start (time.monotonic()); None: none is due."""
        if self._writes:
            if self._idle_waiters:
                return 0.0
            settled = (
                self._last_write
                if self._writes >= self.policy.writes
                else self._last_write + self.policy.delay
            )
            return max(settled, self._next_round)
        return self._follow_up

    async def _run(self) -> None:
        while not self._stopping and (start_at := self._start_at()) is not None:
            if (remaining := start_at - time.monotonic()) > 0:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), remaining)
                continue
            writes, self._writes = self._writes, 0
            self._follow_up = None
            self._running = True
            started = time.monotonic()
            try:
                follow_up = await self._round(writes)
            except Exception as error:
                log.warning("%s upkeep failed writes=%d error=%s", self.name, writes, error)
                follow_up = RETRY_AFTER_FAILURE
            finally:
                self._running = False
                ended = time.monotonic()
                self._next_round = max(
                    started + self.policy.interval, ended + BUSY_FACTOR * (ended - started)
                )
                async with self._changed:
                    self._changed.notify_all()
            if follow_up is not None:
                self._follow_up = time.monotonic() + follow_up
        async with self._changed:
            self._changed.notify_all()
