"""Statistics reporting of one worker process, as the settings choose: the sink (push, tagged
push, pull or stdout, or none with DISABLE_STATS) and its periodic flush, the pull endpoint,
and with several workers the relay that brings every worker's statistics to worker 0."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from handlers.ratelimit.asgi_listener import AsgiListener
from handlers.ratelimit.settings import SettingsError, StatsSettings
from handlers.ratelimit.sinks.base import Sink
from handlers.ratelimit.sinks.flusher import StatsFlusher
from handlers.ratelimit.sinks.metricsd import MetricsdSink, TaggedMetricsdSink, statsd_client
from handlers.ratelimit.sinks.mogrifiers import Mogrifier
from handlers.ratelimit.sinks.pull import PullMetricsEndpoint, PullMetricsSink
from handlers.ratelimit.sinks.pull_mapping import Mapper, MappingError
from handlers.ratelimit.sinks.relay import (
    RELAY_INTERVAL_SECONDS,
    SnapshotReceiver,
    StatsQueue,
    send_snapshots,
)
from handlers.ratelimit.sinks.sources import LocalStats, MergedStats, StatsSource
from handlers.ratelimit.sinks.stdout import StdoutSink
from handlers.ratelimit.stats import StatsStore

log = logging.getLogger("ratelimit.startup")


def create_sink(settings: StatsSettings, *, stdout_enabled: bool = True) -> Sink | None:
    """The sink ``settings.sink`` names (None for ``none``); SettingsError for an unusable
    mapping file."""
    tags = settings.extra_tags
    if settings.sink == "metricsd":
        return MetricsdSink(statsd_client(settings.metricsd_host, settings.metricsd_port), tags)
    if settings.sink == "tagged_metricsd":
        client = statsd_client(settings.metricsd_host, settings.metricsd_port)
        return TaggedMetricsdSink(client, tags, [Mogrifier(m) for m in settings.mogrifiers])
    if settings.sink == "pullmetrics":
        try:
            mapper = (
                Mapper.from_file(settings.pullmetrics_mapper_yaml)
                if settings.pullmetrics_mapper_yaml
                else Mapper.default(settings.pullmetrics_response_time_as_milliseconds)
            )
        except MappingError as error:
            raise SettingsError(str(error)) from None
        return PullMetricsSink(mapper, tags)
    if settings.sink == "stdout":
        return StdoutSink(tags, enabled=stdout_enabled)
    return None


class StatsReporting:
    """Start and stop everything statistics needs in worker ``worker``.

    ``channel`` is the relay queue when there are several workers: worker 0 receives on it and
    reports for all; the others only send. :attr:`source` is what ``/stats`` shows.
    """

    def __init__(
        self,
        settings: StatsSettings,
        store: StatsStore,
        *,
        worker: int = 0,
        channel: StatsQueue | None = None,
        stdout_enabled: bool = True,
    ) -> None:
        self.settings = settings
        self.worker = worker
        self._channel = channel
        local = LocalStats(store)
        self._merged = MergedStats(local) if channel is not None and worker == 0 else None
        self.source: StatsSource = self._merged if self._merged is not None else local
        self.reports = worker == 0
        self.sink = create_sink(settings, stdout_enabled=stdout_enabled) if self.reports else None
        self.flusher = (
            StatsFlusher(
                self.source,
                self.sink,
                send_in_thread=isinstance(self.sink, (MetricsdSink, TaggedMetricsdSink)),
            )
            if self.sink is not None
            else None
        )
        self.pull_listener: AsgiListener | None = None
        self._receiver: SnapshotReceiver | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        settings = self.settings
        if self._channel is not None and not self.reports:
            interval = min(settings.flush_interval, RELAY_INTERVAL_SECONDS)
            self._tasks.append(
                asyncio.create_task(
                    send_snapshots(self.worker, self.source, self._channel, interval)
                )
            )
            return
        if self._merged is not None and self._channel is not None:
            self._receiver = SnapshotReceiver(self._channel, self._merged)
            self._receiver.start()
        if self.flusher is None:
            log.info("Stats disabled" if settings.sink == "none" else "Stats initialized")
            return
        log.info(
            "Stats initialized for %s, flush interval %gs", settings.sink, settings.flush_interval
        )
        self._tasks.append(asyncio.create_task(self.flusher.run(settings.flush_interval)))
        if isinstance(self.sink, PullMetricsSink):
            endpoint = PullMetricsEndpoint(
                settings.pullmetrics_path, self.sink.exposition, self.flusher.flush
            )
            self.pull_listener = AsgiListener(
                endpoint, settings.pullmetrics_host, settings.pullmetrics_port
            )
            await self.pull_listener.start()
            log.info(
                "Listening for pull metrics on '%s:%d%s'",
                settings.pullmetrics_host,
                self.pull_listener.port,
                settings.pullmetrics_path,
            )

    async def stop(self) -> None:
        """Stop the tasks, flush one last time, close the sink and the listeners."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._receiver is not None:
            await self._receiver.stop()
        if self.pull_listener is not None:
            await self.pull_listener.stop()
        if self.flusher is not None:
            try:
                self.flusher.close()
            except Exception as error:  # the last flush is best effort
                log.warning("last stats flush failed: %s", error)
