"""How long the xDS client waits before opening a new stream after one failed.

Two settings families take part, as in the reference (§3.4):

* ``CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL`` is a linear retry interval with jitter
  (+/-50 %, upstream's ``BackoffLinearWithJitter(interval, 0.5)``). It is the wait before the
  first retry after a failure, and the least any retry waits.
* ``XDS_CLIENT_BACKOFF_*`` is the exponential connection backoff for consecutive failures: the
  second retry waits ``INITIAL_INTERVAL``, each further one the previous exponential wait times
  ``RANDOM_FACTOR`` (upstream passes the random factor as gRPC's multiplier), capped at
  ``MAX_INTERVAL``; with ``XDS_CLIENT_BACKOFF_JITTER`` it is randomised by +/-``RANDOM_FACTOR``
  (at most +/-100 %). A factor below 1 makes these waits shrink towards the retry interval.

A response received on a stream proves the connection good: :meth:`reset` starts over.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from handlers.ratelimit.settings import XdsSettings

__all__ = ["ReconnectBackoff"]

LINEAR_JITTER = 0.5


class ReconnectBackoff:
    """The waits between stream attempts; ``uniform`` draws from [0, 1)."""

    def __init__(self, settings: XdsSettings, uniform: Callable[[], float] = random.random) -> None:
        self._settings = settings
        self._uniform = uniform
        self._failures = 0
        self._exponential = settings.backoff_initial_interval

    def reset(self) -> None:
        """The connection works again: the next failure is a first one."""
        self._failures = 0
        self._exponential = self._settings.backoff_initial_interval

    def next_delay(self) -> float:
        """Seconds to wait before the next attempt, counting this failure."""
        settings = self._settings
        spread = LINEAR_JITTER * (2 * self._uniform() - 1)
        linear = settings.connect_retry_interval * (1 + spread)
        self._failures += 1
        if self._failures == 1:
            return linear
        exponential = min(self._exponential, settings.backoff_max_interval)
        self._exponential = min(
            exponential * settings.backoff_random_factor, settings.backoff_max_interval
        )
        if settings.backoff_jitter:
            jitter = min(settings.backoff_random_factor, 1.0)
            exponential *= 1 + jitter * (2 * self._uniform() - 1)
        return max(linear, exponential)
