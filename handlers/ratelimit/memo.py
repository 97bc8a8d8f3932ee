"""Bounded memos: what the service works out once and looks up afterwards (request plans,
rule matches, parsed ``/json`` bodies), forgotten all at once when full."""

from __future__ import annotations

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def remember(memo: dict[K, V], key: K, value: V, size: int) -> V:
    """``value``, stored under ``key``; a memo already holding ``size`` entries is emptied
    first (cheaper than evicting one by one, and a miss is only recomputed)."""
    if len(memo) >= size:
        memo.clear()
    memo[key] = value
    return value
