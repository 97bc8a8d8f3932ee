"""The state of issue 23's limits as the caches store it, and one decision on it.

Redis (its Lua script) and memcached keep one value per limit key, in the same text encoding:
``"<window start ms>:<count>"`` (fixed window), ``"<window start ms>:<current>:<previous>"``
(sliding window), ``"<TAT ms>:<TAT fraction>"`` (token bucket). The memory store keeps the
state tuples themselves. :func:`decide` dispatches a :class:`LimitCheck` to its algorithm in
``algorithms.py``, for every store.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from handlers.ratelimit import algorithms
from handlers.ratelimit.backends.base import LimitCheck

__all__ = ["COUNT_CAP", "STATE_TYPES", "decide", "decode_state", "encode_state"]

logger = logging.getLogger(__name__)

COUNT_CAP = algorithms.MAX_EXACT >> 1
"""A fixed window's stored count stops growing here (far above any limit), as in Redis."""

STATE_TYPES: dict[str, Callable[..., Any]] = {
    "fixed_window": algorithms.FixedWindowState,
    "sliding_window": algorithms.SlidingWindowState,
    "token_bucket": algorithms.GcraState,
}
"""Each algorithm's state type."""

_STATE = re.compile(rb"(-?[0-9]{1,19}):([0-9]{1,19})(?::([0-9]{1,19}))?")


def decide(check: LimitCheck, state: Any, now_ms: int) -> algorithms.Decision[Any]:
    """``check`` decided by its algorithm on ``state`` (None: nothing stored) at ``now_ms``."""
    algorithm = check.algorithm
    if algorithm == "token_bucket":
        return algorithms.token_bucket(
            state, now_ms, check.limit, check.window_ms, check.hits, check.burst
        )
    if algorithm == "sliding_window":
        return algorithms.sliding_window(state, now_ms, check.limit, check.window_ms, check.hits)
    return algorithms.fixed_window(state, now_ms, check.limit, check.window_ms, check.hits)


def encode_state(state: Any) -> bytes:
    """A state as the caches store it: ``start:count``, ``start:current:previous``,
    ``tat_ms:tat_frac`` (milliseconds; a fixed window's count capped at :data:`COUNT_CAP`)."""
    if isinstance(state, algorithms.FixedWindowState):
        return b"%d:%d" % (state.window_start_ms, min(state.counted, COUNT_CAP))
    return b":".join([b"%d" % number for number in state])


def decode_state(key: str, algorithm: str, raw: bytes | None, cache: str = "the cache") -> Any:
    """The ``algorithm``'s state stored as ``raw``; None when missing, or when ``raw`` is not
    that state's encoding (logged with ``cache``'s name: it decides as a missing key)."""
    if raw is None:
        return None
    match = _STATE.fullmatch(raw)
    kind = STATE_TYPES.get(algorithm)
    if match is None or kind is None or (match[3] is None) == (algorithm == "sliding_window"):
        logger.error("Unexpected %s state in %s for key %s: %r", algorithm, cache, key, raw[:60])
        return None
    return kind(*(int(number) for number in match.groups() if number is not None))
