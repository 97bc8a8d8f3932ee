"""Bounded memos: what the service works out once and looks up afterwards (request plans,
rule matches, parsed request bodies of either port), forgotten all at once when full."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

PARSED_BODY_MAX_BYTES = 1024
"""Request bodies up to this size are remembered with what they parse to (``ParsedBodies``)."""
PARSED_CACHE_SIZE = 16384
"""Parsed request bodies remembered at most (per port)."""


def remember(memo: dict[K, V], key: K, value: V, size: int) -> V:
    """``value``, stored under ``key``; a memo already holding ``size`` entries is emptied
    first (cheaper than evicting one by one, and a miss is only recomputed)."""
    if len(memo) >= size:
        memo.clear()
    memo[key] = value
    return value


class ParsedBodies(Generic[T]):
    """Request bodies and what ``parse`` made of each, so that a body seen before is not
    parsed again; bodies over ``max_body_bytes`` are not kept, and at most ``size`` are.
    What ``parse`` returns is shared by every request with that body: read it, never change
    it."""

    def __init__(
        self,
        parse: Callable[[bytes], T],
        *,
        max_body_bytes: int = PARSED_BODY_MAX_BYTES,
        size: int = PARSED_CACHE_SIZE,
    ) -> None:
        self._parse = parse
        self._max_body_bytes = max_body_bytes
        self._size = size
        self._parsed: dict[bytes, T] = {}

    def get(self, body: bytes) -> T:
        """What ``body`` parses to; raises what ``parse`` raises (a failure is not kept)."""
        found = self._parsed.get(body)
        if found is None:
            found = self._parse(body)
            if len(body) <= self._max_body_bytes:
                remember(self._parsed, body, found, self._size)
        return found

    def __contains__(self, body: bytes) -> bool:
        return body in self._parsed

    def __len__(self) -> int:
        return len(self._parsed)
