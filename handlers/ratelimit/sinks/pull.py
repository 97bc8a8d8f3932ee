"""The pull sink (USE_PULLMETRICS): flushed stats become Prometheus metrics by the mapping
(:mod:`~handlers.ratelimit.sinks.pull_mapping`), exposed in the text format at
PULLMETRICS_ADDR + PULLMETRICS_PATH, as the upstream's embedded statsd_exporter does.

Counters add up their flushed increases, gauges take the flushed value, timers are observed
into histograms (or summaries: count and sum) after the mapping's ``scale``. EXTRA_TAGS are
labels of every metric. A stat whose mapped name already exists with another type is dropped
(logged once), as statsd_exporter drops conflicting events; one name with several label sets
(the default mapping's 2- and 3-level keys) keeps them all, where statsd_exporter keeps the
first. Each scrape flushes first, so the endpoint is always current.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import Metric
from starlette.types import Receive, Scope, Send

from handlers.ratelimit.sinks.base import Tags, clean_tags
from handlers.ratelimit.sinks.pull_mapping import MappedMetric, Mapper
from handlers.ratelimit.stats import TimerSamples

log = logging.getLogger("ratelimit.stats")

Labels = tuple[tuple[str, str], ...]


@dataclass
class _Observations:
    bucket_counts: list[float]
    count: int = 0
    total: float = 0.0


@dataclass
class _Family:
    kind: str  # counter, gauge, histogram, summary
    help: str
    buckets: tuple[float, ...] = ()
    values: dict[Labels, float] = field(default_factory=dict)
    observations: dict[Labels, _Observations] = field(default_factory=dict)


class PullMetricsSink:
    """A sink and a Prometheus collector over the metrics it was flushed."""

    def __init__(self, mapper: Mapper, extra_tags: Tags = ()) -> None:
        self._mapper = mapper
        self._extra = clean_tags(extra_tags)
        self._families: dict[str, _Family] = {}
        self._conflicts: set[str] = set()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def _family(self, mapped: MappedMetric | None, kind: str) -> tuple[_Family, Labels] | None:
        if mapped is None:  # a drop mapping
            return None
        labels = dict(self._extra)
        labels.update(mapped.labels)
        family = self._families.get(mapped.name)
        if family is None:
            family = _Family(kind, mapped.help, mapped.buckets)
            self._families[mapped.name] = family
        elif family.kind != kind:
            if mapped.name not in self._conflicts:
                self._conflicts.add(mapped.name)
                log.warning(
                    "pull metric %s exists as a %s: dropping the %s mapped to it",
                    mapped.name,
                    family.kind,
                    kind,
                )
            return None
        return family, tuple(sorted(labels.items()))

    def counter(self, name: str, delta: int) -> None:
        found = self._family(self._mapper.map(name, "counter"), "counter")
        if found is not None:
            family, labels = found
            family.values[labels] = family.values.get(labels, 0.0) + delta

    def gauge(self, name: str, value: int) -> None:
        found = self._family(self._mapper.map(name, "gauge"), "gauge")
        if found is not None:
            family, labels = found
            family.values[labels] = float(value)

    def timer(self, name: str, samples: TimerSamples) -> None:
        mapped = self._mapper.map(name, "observer")
        found = self._family(mapped, mapped.observer_type) if mapped is not None else None
        if mapped is None or found is None or not samples.count:
            return
        family, labels = found
        observed = family.observations.get(labels)
        if observed is None:
            observed = family.observations[labels] = _Observations([0.0] * len(family.buckets))
        observed.count += samples.count
        observed.total += samples.total_ms * mapped.scale
        if family.kind == "histogram" and samples.samples_ms:
            # each kept sample stands for count/len samples when the timer kept only a sample
            weight = samples.count / len(samples.samples_ms)
            for milliseconds in samples.samples_ms:
                index = bisect.bisect_left(family.buckets, milliseconds * mapped.scale)
                if index < len(family.buckets):
                    observed.bucket_counts[index] += weight

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None

    def collect(self) -> Iterator[Metric]:
        """The metrics, for the registry (called on the event loop by the endpoint)."""
        for name, family in sorted(self._families.items()):
            metric = Metric(name, family.help, family.kind)
            if family.kind in ("counter", "gauge"):
                for labels, value in family.values.items():
                    metric.add_sample(name, dict(labels), value)
            for labels, observed in family.observations.items():
                if family.kind == "histogram":
                    cumulative = 0.0
                    for bound, count in zip(family.buckets, observed.bucket_counts, strict=True):
                        cumulative += count
                        metric.add_sample(
                            name + "_bucket", {**dict(labels), "le": repr(bound)}, cumulative
                        )
                    metric.add_sample(
                        name + "_bucket", {**dict(labels), "le": "+Inf"}, observed.count
                    )
                metric.add_sample(name + "_count", dict(labels), observed.count)
                metric.add_sample(name + "_sum", dict(labels), observed.total)
            yield metric

    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format (0.0.4).

        prometheus_client names a counter family ``<name>_total`` in its HELP and TYPE lines;
        the upstream's counters (``ratelimit_service_rate_limit_over_limit``) have no such
        suffix, so those two lines are given the samples' name back, as client_golang writes.
        """
        text = generate_latest(self.registry)
        for name, family in self._families.items():
            if family.kind == "counter" and not name.endswith("_total"):
                text = text.replace(
                    b"# HELP " + name.encode() + b"_total ", b"# HELP " + name.encode() + b" ", 1
                ).replace(
                    b"# TYPE " + name.encode() + b"_total counter\n",
                    b"# TYPE " + name.encode() + b" counter\n",
                    1,
                )
        return text


class PullMetricsEndpoint:
    """ASGI application: the metrics in Prometheus' text format at ``path`` (GET or HEAD),
    after ``before_scrape`` (a flush); 404 elsewhere."""

    def __init__(
        self, path: str, exposition: Callable[[], bytes], before_scrape: Callable[[], None]
    ) -> None:
        self.path = path
        self._exposition = exposition
        self._before_scrape = before_scrape

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] != self.path:
            await _answer(send, 404, b"404 page not found\n", "text/plain; charset=utf-8")
        elif scope["method"] not in ("GET", "HEAD"):
            await _answer(send, 405, b"Method Not Allowed\n", "text/plain; charset=utf-8")
        else:
            self._before_scrape()
            body = self._exposition()
            await _answer(send, 200, body, CONTENT_TYPE_PLAIN_0_0_4, scope["method"] == "HEAD")


async def _answer(
    send: Send, status: int, body: bytes, content_type: str, head: bool = False
) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})
