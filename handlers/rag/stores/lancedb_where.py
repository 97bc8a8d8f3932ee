"""A search's collection and metadata filter as a LanceDB ``where`` expression (SQL).

The chunk columns it reads: ``collection`` (BITMAP index), ``meta_terms`` (the document's
metadata terms, :func:`handlers.rag.metadata.metadata_terms`; LABEL_LIST index) and
``meta_numbers`` (``map<string, double>`` of its numeric values, not indexed: read only for a
range that :func:`~handlers.rag.stores.filtering.resolve_ranges` left as a range). Nothing of
the client's text is copied into the expression: collection names and keys are checked
against their grammars (which admit no quote), terms are hex digits, numbers are formatted
from floats, and every literal is quoted with its quotes doubled all the same.
"""

from __future__ import annotations

from handlers.rag.filters import AllOf, AnyOf, Equals, Filter, Range
from handlers.rag.metadata import check_collection, is_key

__all__ = ["quote", "where_sql"]


def quote(value: str) -> str:
    """An SQL string literal of ``value``."""
    return "'" + value.replace("'", "''") + "'"


def where_sql(collection: str, condition: Filter | None) -> str:
    """The expression selecting the chunks of ``collection`` that satisfy ``condition``."""
    clause = f"collection = {quote(check_collection(collection))}"
    if condition is None:
        return clause
    return f"{clause} AND {_sql(condition)}"


def _sql(condition: Filter) -> str:
    if isinstance(condition, AllOf | AnyOf):
        if not condition.items:
            return "TRUE" if isinstance(condition, AllOf) else "FALSE"
        joiner = " AND " if isinstance(condition, AllOf) else " OR "
        return "(" + joiner.join(_sql(item) for item in condition.items) + ")"
    if isinstance(condition, Equals):
        terms = condition.terms
        if not terms:
            return "FALSE"
        return f"array_has_any(meta_terms, [{', '.join(quote(t) for t in terms)}])"
    return _range_sql(condition)


def _range_sql(condition: Range) -> str:
    if not is_key(condition.key):
        raise ValueError(f"not a metadata key: {condition.key!r}")
    value = f"map_extract(meta_numbers, {quote(condition.key)})[1]"
    parts = []
    if condition.lower is not None:
        operator = ">=" if condition.lower_inclusive else ">"
        parts.append(f"{value} {operator} {_number(condition.lower)}")
    if condition.upper is not None:
        operator = "<=" if condition.upper_inclusive else "<"
        parts.append(f"{value} {operator} {_number(condition.upper)}")
    if not parts:
        return f"{value} IS NOT NULL"
    return "(" + " AND ".join(parts) + ")"


def _number(value: float) -> str:
    return f"CAST({quote(repr(float(value)))} AS DOUBLE)"
