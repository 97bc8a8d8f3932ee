"""What every statistics sink implements, and the tag spellings the upstream uses.

A sink receives one flush at a time from :class:`~handlers.ratelimit.sinks.flusher.StatsFlusher`:
counters as the increase since the previous flush (only those that changed), every gauge's
value, and each timer's samples in milliseconds, then :meth:`Sink.flush`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from handlers.ratelimit.stats import TimerSamples

Tags = Sequence[tuple[str, str]]

_TAG_VALUE_SEPARATORS = str.maketrans({".": "_", ":": "_", "|": "_"})


class Sink(Protocol):
    """A destination of statistics."""

    def counter(self, name: str, delta: int) -> None:
        """``name`` increased by ``delta`` since the previous flush."""

    def gauge(self, name: str, value: int) -> None:
        """``name`` is now ``value``."""

    def timer(self, name: str, samples: TimerSamples) -> None:
        """The durations ``name`` recorded since the previous flush."""

    def flush(self) -> None:
        """The end of one flush: send what is buffered."""

    def close(self) -> None:
        """Release the sink's resources (after a last flush)."""


def clean_tags(tags: Tags) -> list[tuple[str, str]]:
    """gostats' tag set: empty keys or values dropped, ``.:|`` in values replaced by ``_``,
    sorted by key (the last value of a repeated key wins)."""
    cleaned = {key: value.translate(_TAG_VALUE_SEPARATORS) for key, value in tags if key and value}
    return sorted(cleaned.items())


def serialize_tags(name: str, tags: Tags) -> str:
    """A stat name with its tags as gostats writes them for plain statsd:
    ``name.__key=value`` per tag, sorted by key."""
    return name + "".join(f".__{key}={value}" for key, value in clean_tags(tags))


def dogstatsd_tags(tags: Tags) -> list[str]:
    """The tags as DogStatsD ``key:value`` strings, in gostats' order."""
    return [f"{key}:{value}" for key, value in clean_tags(tags)]
