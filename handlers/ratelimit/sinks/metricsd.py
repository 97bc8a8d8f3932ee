"""The push sinks: statsd lines over UDP to METRICSD_HOST:METRICSD_PORT, written by the
``datadog`` package's DogStatsd client.

- plain (METRICSD): ``name:delta|c``, ``name:value|g``, ``name:ms|ms``; EXTRA_TAGS are part of
  the name as gostats writes them (``name.__key=value``).
- tagged (TAGGED_METRICSD): DogStatsD tags (``name:1|c|#key:value``): EXTRA_TAGS, then the
  tags of the first matching mogrifier, which may also rename the stat.

Lines are buffered into datagrams and sent at the end of each flush. A send failure (nothing
listening, a name that does not resolve) drops that flush's datagram; the library logs it.
"""

from __future__ import annotations

from collections.abc import Sequence

from datadog.dogstatsd.base import DogStatsd

from handlers.ratelimit.sinks.base import Tags, dogstatsd_tags, serialize_tags
from handlers.ratelimit.sinks.mogrifiers import Mogrifier, mogrify
from handlers.ratelimit.stats import TimerSamples


def statsd_client(host: str, port: int) -> DogStatsd:
    """A buffering UDP client without the library's own telemetry, origin detection or flush
    thread (the flusher sends each flush's buffer itself)."""
    return DogStatsd(
        host=host,
        port=port,
        disable_buffering=False,
        flush_interval=0,
        disable_telemetry=True,
        origin_detection_enabled=False,
        track_instance=False,
    )


class MetricsdSink:
    """Plain statsd: tags serialized into the names."""

    def __init__(self, client: DogStatsd, extra_tags: Tags = ()) -> None:
        self._client = client
        client.constant_tags = []  # DATADOG_TAGS/DD_ENV would add tags plain statsd cannot carry
        self._extra_tags = tuple(extra_tags)
        self._names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        found = self._names.get(name)
        if found is None:
            found = self._names.setdefault(name, serialize_tags(name, self._extra_tags))
        return found

    def counter(self, name: str, delta: int) -> None:
        self._client.increment(self._name(name), delta)

    def gauge(self, name: str, value: int) -> None:
        self._client.gauge(self._name(name), value)

    def timer(self, name: str, samples: TimerSamples) -> None:
        full = self._name(name)
        for milliseconds in samples.samples_ms:
            self._client.timing(full, milliseconds)

    def flush(self) -> None:
        self._client.flush()

    def close(self) -> None:
        self._client.flush()
        self._client.close_socket()


class TaggedMetricsdSink:
    """DogStatsD: EXTRA_TAGS and mogrifier tags as tags."""

    def __init__(
        self, client: DogStatsd, extra_tags: Tags = (), mogrifiers: Sequence[Mogrifier] = ()
    ) -> None:
        self._client = client
        self._extra_tags = dogstatsd_tags(extra_tags)
        self._mogrifiers = tuple(mogrifiers)
        self._names: dict[str, tuple[str, list[str]]] = {}

    def _mogrified(self, name: str) -> tuple[str, list[str]]:
        found = self._names.get(name)
        if found is None:
            new_name, tags = mogrify(self._mogrifiers, name)
            found = self._names.setdefault(name, (new_name, self._extra_tags + tags))
        return found

    def counter(self, name: str, delta: int) -> None:
        new_name, tags = self._mogrified(name)
        self._client.increment(new_name, delta, tags=tags or None)

    def gauge(self, name: str, value: int) -> None:
        new_name, tags = self._mogrified(name)
        self._client.gauge(new_name, value, tags=tags or None)

    def timer(self, name: str, samples: TimerSamples) -> None:
        new_name, tags = self._mogrified(name)
        for milliseconds in samples.samples_ms:
            self._client.timing(new_name, milliseconds, tags=tags or None)

    def flush(self) -> None:
        self._client.flush()

    def close(self) -> None:
        self._client.flush()
        self._client.close_socket()
