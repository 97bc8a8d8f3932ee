"""Several workers' statistics merged in worker 0, through a real multiprocessing queue."""

from __future__ import annotations

import asyncio
import multiprocessing

from handlers.ratelimit.debug_server import stats_lines
from handlers.ratelimit.sinks.relay import SnapshotReceiver, StatsQueue, send_snapshots
from handlers.ratelimit.sinks.sources import LocalStats, MergedStats, WorkerSnapshot
from handlers.ratelimit.stats import StatsStore


async def test_worker_snapshots_are_summed_in_worker_zero() -> None:
    channel: StatsQueue = multiprocessing.get_context("spawn").Queue()
    own, other = StatsStore(), StatsStore()
    merged = MergedStats(LocalStats(own))
    receiver = SnapshotReceiver(channel, merged)
    receiver.start()
    own.counter("c").add(2)
    own.gauge("g").set(1)
    own.timer("t").record(1.0)
    other.counter("c").add(5)
    other.gauge("g").set(3)
    other.timer("t").record(3.0)
    sender = asyncio.create_task(send_snapshots(1, LocalStats(other), channel, 0.05))
    try:
        deadline = asyncio.get_running_loop().time() + 5
        while merged.counters().get("c") != 7:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.02)
        assert merged.gauges() == {"g": 4}
        assert merged.timer_totals() == {"t": (2, 4.0)}
        drained = merged.drain_timers()["t"]
        assert (sorted(drained.samples_ms), drained.count, drained.total_ms) == ([1.0, 3.0], 2, 4.0)
        assert "t" not in merged.drain_timers()
        assert stats_lines(merged) == ["c: 7", "g: 4", "t: count=2 total_ms=4.000"]
    finally:
        sender.cancel()
        await asyncio.gather(sender, return_exceptions=True)
        await receiver.stop()
        channel.close()
        channel.join_thread()


def test_an_averaged_gauge_is_the_weighted_mean_over_the_workers() -> None:
    own, other, idle = StatsStore(), StatsStore(), StatsStore()
    for store, entries, average in ((own, 1, 1000), (other, 3, 2000), (idle, 0, 0)):
        store.gauge("entries").set(entries)
        store.gauge("accessed", averaged_over="entries").set(average)
    merged = MergedStats(LocalStats(own))
    merged.receive(WorkerSnapshot.take(1, LocalStats(other)))
    merged.receive(WorkerSnapshot.take(2, LocalStats(idle)))
    assert merged.gauges() == {"entries": 4, "accessed": (1000 + 3 * 2000) // 4}
    assert merged.gauge_weights() == {"accessed": "entries"}
