"""What both stores share of filtering: range conditions turned into indexed term lookups.

Metadata belongs to documents, and every live document is known in memory
(:class:`~handlers.rag.stores.consistency.LiveDocuments`), so the numeric values a key takes in
a collection are known too. A range condition becomes an ``Equals`` on the values that fall
within it, a lookup in the chunks' indexed term list, as cheap as an equality filter, instead
of a scan of a numeric column on every row; when more than ``cap`` distinct values fall within
it, the store scans instead (LanceDB), or looks them all up (Weaviate, ``cap`` None).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping

from handlers.rag.documents import DocumentRecord
from handlers.rag.filters import AllOf, AnyOf, Equals, Filter, Range

__all__ = ["RANGE_TERMS_MAX", "NumericValues", "resolve_ranges"]

RANGE_TERMS_MAX = 512
"""Distinct values up to which LanceDB turns a range into a term lookup."""


class NumericValues:
    """The distinct numeric metadata values of the live documents, by collection and key;
    recomputed once per live set (the live mapping is replaced as a whole, never mutated)."""

    def __init__(self) -> None:
        self._source: Mapping[str, DocumentRecord] | None = None
        self._values: dict[tuple[str, str], list[float]] = {}

    def values(self, live: Mapping[str, DocumentRecord], collection: str, key: str) -> list[float]:
        """The sorted distinct numeric values of ``key`` in ``collection``."""
        if live is not self._source:
            found: dict[tuple[str, str], set[float]] = {}
            for record in live.values():
                for name, value in record.metadata.items():
                    if isinstance(value, int | float) and not isinstance(value, bool):
                        found.setdefault((record.collection, name), set()).add(float(value))
            self._values = {k: sorted(v) for k, v in found.items()}
            self._source = live
        return self._values.get((collection, key), [])


def _within(values: list[float], condition: Range) -> list[float]:
    start = 0
    if condition.lower is not None:
        side = bisect.bisect_left if condition.lower_inclusive else bisect.bisect_right
        start = side(values, condition.lower)
    end = len(values)
    if condition.upper is not None:
        side = bisect.bisect_right if condition.upper_inclusive else bisect.bisect_left
        end = side(values, condition.upper)
    return values[start:end]


def resolve_ranges(
    condition: Filter,
    live: Mapping[str, DocumentRecord],
    collection: str,
    numbers: NumericValues,
    cap: int | None,
) -> Filter:
    """``condition`` with each range that ``cap`` distinct values or fewer satisfy replaced by
    the equality on them (an ``Equals`` without values holds for no document)."""
    if isinstance(condition, AllOf):
        items = (resolve_ranges(i, live, collection, numbers, cap) for i in condition.items)
        return AllOf(tuple(items))
    if isinstance(condition, AnyOf):
        items = (resolve_ranges(i, live, collection, numbers, cap) for i in condition.items)
        return AnyOf(tuple(items))
    if isinstance(condition, Equals):
        return condition
    inside = _within(numbers.values(live, collection, condition.key), condition)
    if cap is not None and len(inside) > cap:
        return condition
    return Equals(condition.key, tuple(inside))
