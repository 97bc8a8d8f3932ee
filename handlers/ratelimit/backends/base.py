"""What the limiter needs from a cache: fixed-window counters with expiry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

from handlers.ratelimit.algorithms import Decision


class BackendError(Exception):
    """The cache failed (connection, timeout, protocol). The message is the cache's error
    text; the service answers the call with gRPC UNKNOWN (HTTP 400) and counts
    ``should_rate_limit.redis_error``."""


class Increment(NamedTuple):
    """``INCRBY key amount`` then ``EXPIRE key expire_seconds`` (a tuple: one is made per
    descriptor per request)."""

    key: str
    amount: int
    expire_seconds: int
    per_second: bool
    """The key's unit is SECOND: it goes to the per-second instance when there is one."""


class CounterStore(Protocol):
    """A cache holding one integer counter per key.

    ``increment`` sends all of a request's increments in one round trip per instance (a
    pipeline), and returns each key's value after its increment, in order.
    """

    async def start(self) -> None:
        """Connect and check the cache answers (retrying as configured); raises
        :class:`BackendError` when it cannot."""
        ...

    async def get(self, keys: Sequence[tuple[str, bool]]) -> list[int]:
        """Current values of ``(key, per_second)`` pairs (0 for a missing key), in order."""
        ...

    async def increment(self, increments: Sequence[Increment]) -> list[int]:
        """Apply the increments (refreshing each key's expiry) and return the new values."""
        ...

    def connected(self) -> bool:
        """Whether there is at least one active connection (the cache health component)."""
        ...

    async def close(self) -> None: ...


class LimitCheck(NamedTuple):
    """One limit of issue 23 (``handlers/ratelimit/algorithms.py``) to decide on a request's
    hits: the key holds the algorithm's state."""

    key: str
    algorithm: str
    """``fixed_window``, ``sliding_window`` or ``token_bucket``."""
    limit: int
    window_ms: int
    burst: int
    """The token bucket's size (0 for the windows)."""
    hits: int


@runtime_checkable
class AlgorithmStore(Protocol):
    """A store that decides every algorithm of ``algorithms.py``: the memory store, Redis (its
    Lua script) and memcached (a ``gets``/``cas`` loop)."""

    async def decide(self, checks: Sequence[LimitCheck], now_ms: int) -> list[Decision[Any]]:
        """Decide each check at ``now_ms`` (the limiter's clock, in ms) and store its new
        state, in order; all of them atomically with respect to other requests."""
        ...

    async def peek(self, checks: Sequence[LimitCheck], now_ms: int) -> list[Decision[Any]]:
        """Decide each check at ``now_ms`` on its key's stored state and store nothing (the
        counters API reads with checks of 0 hits). The decisions' ``state`` may be None."""
        ...
