"""The periodic flush of statistics into the chosen sink (every STATS_FLUSH_INTERVAL), as
gostats does: counters that changed as their increase, every gauge, the timer samples."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from handlers.ratelimit.sinks.base import Sink
from handlers.ratelimit.sinks.sources import StatsSource
from handlers.ratelimit.stats import TimerSamples

log = logging.getLogger("ratelimit.stats")


@dataclass(frozen=True, slots=True)
class Flush:
    """One flush's content: counter increases, gauge values, timer samples."""

    counters: list[tuple[str, int]]
    gauges: list[tuple[str, int]]
    timers: list[tuple[str, TimerSamples]]


class StatsFlusher:
    """Flushes ``source`` into ``sink``; :meth:`flush` may also be called between the periodic
    flushes (the pull endpoint does before each scrape). With ``send_in_thread`` (network
    sinks) the periodic flushes hand the collected values to the sink in a worker thread, so
    name resolution and sends never block the event loop."""

    def __init__(self, source: StatsSource, sink: Sink, *, send_in_thread: bool = False) -> None:
        self.source = source
        self.sink = sink
        self._send_in_thread = send_in_thread
        self._flushed: dict[str, int] = {}

    def collect(self) -> Flush:
        """What changed since the previous collection (on the event loop)."""
        counters = self.source.counters()
        increases = []
        for name, value in counters.items():
            delta = value - self._flushed.get(name, 0)
            if delta > 0:
                increases.append((name, delta))
        self._flushed = counters
        return Flush(
            increases,
            list(self.source.gauges().items()),
            list(self.source.drain_timers().items()),
        )

    def send(self, flush: Flush) -> None:
        for name, delta in flush.counters:
            self.sink.counter(name, delta)
        for name, value in flush.gauges:
            self.sink.gauge(name, value)
        for name, samples in flush.timers:
            self.sink.timer(name, samples)
        self.sink.flush()

    def flush(self) -> None:
        """Collect and send now."""
        self.send(self.collect())

    async def run(self, interval: float) -> None:
        """Flush every ``interval`` seconds until cancelled; a failed flush is logged."""
        while True:
            await asyncio.sleep(interval)
            try:
                collected = self.collect()
                if self._send_in_thread:
                    await asyncio.to_thread(self.send, collected)
                else:
                    self.send(collected)
            except Exception as error:  # a sink failure must not stop the flushes
                log.warning("stats flush failed: %s", error)

    def close(self) -> None:
        """A last flush, then close the sink."""
        try:
            self.flush()
        finally:
            self.sink.close()
