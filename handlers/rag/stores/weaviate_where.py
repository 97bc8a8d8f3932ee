"""A search's collection and metadata filter as a Weaviate ``where`` filter.

Chunk objects carry ``collection`` and ``meta_terms`` (the document's metadata terms,
:func:`handlers.rag.metadata.metadata_terms`), both filterable with ``field`` tokenization;
an equality or ``in`` is ``contains_any`` on the terms, and ranges arrive already turned into
equalities on the live values within them
(:func:`~handlers.rag.stores.filtering.resolve_ranges` without a cap).
"""

from __future__ import annotations

from weaviate.classes.query import Filter as Where
from weaviate.collections.classes.filters import _Filters

from handlers.rag.filters import AllOf, AnyOf, Equals, Filter
from handlers.rag.metadata import check_collection

__all__ = ["NO_TERM", "weaviate_where"]

NO_TERM = "none"
"""A term no document has (terms are hex digits): the filter that holds for nothing."""


def weaviate_where(collection: str, condition: Filter | None) -> _Filters:
    """The filter selecting the chunks of ``collection`` that satisfy ``condition``."""
    base = Where.by_property("collection").equal(check_collection(collection))
    translated = None if condition is None else _where(condition)
    return base if translated is None else Where.all_of([base, translated])


def _where(condition: Filter) -> _Filters | None:
    """The filter of ``condition``; None when it holds for every document."""
    if isinstance(condition, AllOf):
        items = [w for w in (_where(item) for item in condition.items) if w is not None]
        if not items:
            return None
        return items[0] if len(items) == 1 else Where.all_of(items)
    if isinstance(condition, AnyOf):
        found = [_where(item) for item in condition.items]
        if not found:
            return _nothing()
        if any(w is None for w in found):
            return None
        items = [w for w in found if w is not None]
        return items[0] if len(items) == 1 else Where.any_of(items)
    if isinstance(condition, Equals):
        terms = condition.terms
        return Where.by_property("meta_terms").contains_any(terms) if terms else _nothing()
    raise ValueError(f"a range reaches Weaviate unresolved: {condition!r}")


def _nothing() -> _Filters:
    return Where.by_property("meta_terms").contains_any([NO_TERM])
