"""Statistics of several worker processes in one place.

Each worker counts in its own memory. Workers other than worker 0 send a
:class:`~handlers.ratelimit.sinks.sources.WorkerSnapshot` of their statistics every
``interval`` over a multiprocessing queue; worker 0 merges them into its
:class:`~handlers.ratelimit.sinks.sources.MergedStats`, which feeds the sink, the pull endpoint
and the debug server's ``/stats``. Only worker 0 therefore emits statistics: counters are the
sum over the workers, gauges too (connections, cache entries), timers carry every worker's
samples. What another worker counted reaches worker 0 within ``interval``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from multiprocessing.queues import Queue
from typing import TypeAlias

from handlers.ratelimit.sinks.sources import MergedStats, StatsSource, WorkerSnapshot

log = logging.getLogger("ratelimit.stats")

RELAY_INTERVAL_SECONDS = 1.0
"""How often workers send their statistics to worker 0 (at most STATS_FLUSH_INTERVAL)."""

StatsQueue: TypeAlias = "Queue[WorkerSnapshot]"


async def send_snapshots(
    worker: int, source: StatsSource, channel: StatsQueue, interval: float
) -> None:
    """Run in a worker other than 0: send a snapshot every ``interval`` until cancelled (and a
    last one then)."""
    channel.cancel_join_thread()  # never block this process's exit on an unread queue
    try:
        while True:
            await asyncio.sleep(interval)
            channel.put(WorkerSnapshot.take(worker, source))
    finally:
        with contextlib.suppress(Exception):
            channel.put(WorkerSnapshot.take(worker, source))


class SnapshotReceiver:
    """Run in worker 0: a thread reads the snapshots and hands them to ``merged`` on the event
    loop (the only thread that touches statistics)."""

    def __init__(self, channel: StatsQueue, merged: MergedStats) -> None:
        self._channel = channel
        self._merged = merged
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._thread = threading.Thread(
            target=self._read, args=(loop,), name="ratelimit-stats-relay", daemon=True
        )
        self._thread.start()

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        while not self._stopping.is_set():
            try:
                snapshot = self._channel.get(timeout=0.2)
            except queue.Empty:
                continue
            except (EOFError, OSError):
                return
            try:
                loop.call_soon_threadsafe(self._merged.receive, snapshot)
            except RuntimeError:  # the loop closed
                return

    async def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
