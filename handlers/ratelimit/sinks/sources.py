"""Where a flush reads the statistics from: one process's store, or (with several worker
processes) that store merged with the snapshots the other workers relay."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from handlers.ratelimit.stats import StatsStore, TimerSamples


class StatsSource(Protocol):
    """Current statistics, and the timer samples recorded since the last drain."""

    def counters(self) -> dict[str, int]: ...

    def gauges(self) -> dict[str, int]: ...

    def gauge_weights(self) -> dict[str, str]:
        """The averaged gauges, each with the gauge it is averaged over."""
        ...

    def timer_totals(self) -> dict[str, tuple[int, float]]:
        """Each timer's count and total milliseconds since the start."""
        ...

    def drain_timers(self) -> dict[str, TimerSamples]:
        """The samples of every timer that recorded any since the last drain."""
        ...


def merge_samples(parts: Iterable[TimerSamples]) -> TimerSamples:
    """Several drains of one timer as one."""
    samples: list[float] = []
    count, total = 0, 0.0
    for part in parts:
        samples.extend(part.samples_ms)
        count += part.count
        total += part.total_ms
    return TimerSamples(samples, count, total)


class LocalStats:
    """The statistics of this process."""

    def __init__(self, store: StatsStore) -> None:
        self.store = store

    def counters(self) -> dict[str, int]:
        return self.store.counters()

    def gauges(self) -> dict[str, int]:
        return self.store.gauges()

    def gauge_weights(self) -> dict[str, str]:
        return self.store.gauge_weights()

    def timer_totals(self) -> dict[str, tuple[int, float]]:
        return {name: (t.count, t.total_ms) for name, t in self.store.timers().items()}

    def drain_timers(self) -> dict[str, TimerSamples]:
        drained = {name: t.drain() for name, t in self.store.timers().items()}
        return {name: samples for name, samples in drained.items() if samples.count}


@dataclass(frozen=True, slots=True)
class WorkerSnapshot:
    """What a worker process relays: its counters, gauges and timer totals so far, and the
    timer samples since its previous snapshot."""

    worker: int
    counters: dict[str, int]
    gauges: dict[str, int]
    timer_totals: dict[str, tuple[int, float]]
    timers: dict[str, TimerSamples] = field(default_factory=dict)

    @classmethod
    def take(cls, worker: int, source: StatsSource) -> WorkerSnapshot:
        return cls(
            worker,
            source.counters(),
            source.gauges(),
            source.timer_totals(),
            source.drain_timers(),
        )


class MergedStats:
    """This process's statistics plus the latest snapshot of every other worker: counters,
    gauges and timer totals are summed over the workers (an averaged gauge is the mean weighted
    by the gauge it is averaged over), timer samples concatenated."""

    def __init__(self, local: StatsSource) -> None:
        self.local = local
        self._latest: dict[int, WorkerSnapshot] = {}
        self._pending: dict[str, list[TimerSamples]] = {}

    def receive(self, snapshot: WorkerSnapshot) -> None:
        self._latest[snapshot.worker] = snapshot
        for name, samples in snapshot.timers.items():
            self._pending.setdefault(name, []).append(samples)

    def _summed(self, own: dict[str, int], attribute: str) -> dict[str, int]:
        total = dict(own)
        for snapshot in self._latest.values():
            for name, value in getattr(snapshot, attribute).items():
                total[name] = total.get(name, 0) + value
        return total

    def counters(self) -> dict[str, int]:
        return self._summed(self.local.counters(), "counters")

    def gauges(self) -> dict[str, int]:
        own = self.local.gauges()
        total = self._summed(own, "gauges")
        parts = [own, *(snapshot.gauges for snapshot in self._latest.values())]
        for name, weight in self.local.gauge_weights().items():
            count = sum(part.get(weight, 0) for part in parts)
            weighted = sum(part.get(name, 0) * part.get(weight, 0) for part in parts)
            total[name] = weighted // count if count else 0
        return total

    def gauge_weights(self) -> dict[str, str]:
        return self.local.gauge_weights()

    def timer_totals(self) -> dict[str, tuple[int, float]]:
        totals = dict(self.local.timer_totals())
        for snapshot in self._latest.values():
            for name, (count, total_ms) in snapshot.timer_totals.items():
                known = totals.get(name, (0, 0.0))
                totals[name] = (known[0] + count, known[1] + total_ms)
        return totals

    def drain_timers(self) -> dict[str, TimerSamples]:
        parts = {name: [samples] for name, samples in self.local.drain_timers().items()}
        for name, pending in self._pending.items():
            parts.setdefault(name, []).extend(pending)
        self._pending = {}
        return {name: merge_samples(samples) for name, samples in parts.items()}
