"""The metadata filter of searches and answers: its grammar, parsed into a small tree that each
store translates into its own query filter (run inside the store, before ranking).

The grammar (a JSON object; a subset of MongoDB's query language)::

    filter    := { clause, ... }                 all clauses hold (an empty object: no filter)
    clause    := "$and": [filter, ...]           every filter holds (1 to 16 of them)
               | "$or":  [filter, ...]           at least one holds (1 to 16 of them)
               | KEY: scalar                     equality (same as {"$eq": scalar})
               | KEY: { op: operand, ... }       every operator holds
    op        := "$eq": scalar | "$in": [scalar, ...] (1 to 100)
               | "$gt" | "$gte" | "$lt" | "$lte": number
    scalar    := string | number | boolean

Semantics: a key's value equals a scalar when they are the same type and value (``1`` and
``1.0`` are equal; ``"1"``, ``1`` and ``true`` are not); a list-of-strings value equals a
string when it contains it, as in MongoDB. ``$in`` holds when the value equals any of its
operands. Ranges hold for numeric values only. A document without the key matches no
condition on it. Bounds: ``$and``/``$or`` nest at most :data:`MAX_DEPTH` deep, a filter has at
most :data:`MAX_CONDITIONS` key conditions, ``$in`` at most :data:`MAX_IN` operands; keys
follow the metadata key grammar. Anything else is a :class:`FilterError` naming where.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeAlias

from handlers.rag.metadata import (
    KEY_PATTERN,
    MAX_STRING_CHARS,
    Metadata,
    Scalar,
    canonical_number,
    is_key,
    term,
)

__all__ = [
    "MAX_CONDITIONS",
    "MAX_DEPTH",
    "MAX_IN",
    "AllOf",
    "AnyOf",
    "Equals",
    "Filter",
    "FilterError",
    "Range",
    "matches",
    "parse_filter",
]

MAX_DEPTH = 4
MAX_BRANCHES = 16
MAX_CONDITIONS = 64
MAX_IN = 100

Path: TypeAlias = tuple[str | int, ...]


class FilterError(ValueError):
    """A filter outside the grammar; ``path`` locates the problem inside the filter."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


@dataclass(frozen=True, slots=True)
class Equals:
    """``key``'s value equals one of ``values`` (for a list value: contains one)."""

    key: str
    values: tuple[Scalar, ...]

    @property
    def terms(self) -> list[str]:
        """The index terms (:func:`handlers.rag.metadata.term`) that satisfy it."""
        return sorted({term(self.key, value) for value in self.values})


@dataclass(frozen=True, slots=True)
class Range:
    """``key``'s numeric value within the bounds (None: unbounded on that side)."""

    key: str
    lower: float | None = None
    lower_inclusive: bool = True
    upper: float | None = None
    upper_inclusive: bool = True

    def holds(self, value: float) -> bool:
        if self.lower is not None and (
            value < self.lower or (value == self.lower and not self.lower_inclusive)
        ):
            return False
        return self.upper is None or not (
            value > self.upper or (value == self.upper and not self.upper_inclusive)
        )


@dataclass(frozen=True, slots=True)
class AllOf:
    """Every one of ``items`` holds."""

    items: tuple[Filter, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    """At least one of ``items`` holds."""

    items: tuple[Filter, ...]


Filter: TypeAlias = Equals | Range | AllOf | AnyOf

_RANGE_OPERATORS = {"$gt", "$gte", "$lt", "$lte"}


def parse_filter(value: object) -> Filter | None:
    """The filter of a request's ``filter`` field (None or {}: no filter); FilterError when it
    is outside the grammar."""
    if value is None:
        return None
    counter = [0]
    parsed = _object(value, (), 0, counter)
    return parsed


def _object(value: object, path: Path, depth: int, counter: list[int]) -> Filter | None:
    if not isinstance(value, Mapping):
        raise FilterError("a filter is a JSON object", path)
    clauses: list[Filter] = []
    for key, operand in value.items():
        where = (*path, str(key))
        if key in ("$and", "$or"):
            clauses.append(_branches(str(key), operand, where, depth, counter))
        elif isinstance(key, str) and key.startswith("$"):
            raise FilterError(f"unknown operator {key[:32]!r}: expected $and or $or", where)
        elif not is_key(key):
            raise FilterError(f"a metadata key matches {KEY_PATTERN}", where)
        else:
            clauses.extend(_conditions(str(key), operand, where, counter))
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else AllOf(tuple(clauses))


def _branches(operator: str, operand: object, path: Path, depth: int, counter: list[int]) -> Filter:
    if depth + 1 > MAX_DEPTH:
        raise FilterError(f"$and and $or nest at most {MAX_DEPTH} deep", path)
    if not isinstance(operand, list) or not 1 <= len(operand) <= MAX_BRANCHES:
        raise FilterError(f"{operator} takes a list of 1 to {MAX_BRANCHES} filters", path)
    items = []
    for index, item in enumerate(operand):
        parsed = _object(item, (*path, index), depth + 1, counter)
        if parsed is None:  # an empty filter holds for every document
            if operator == "$or":
                return AllOf(())
            continue
        items.append(parsed)
    return AllOf(tuple(items)) if operator == "$and" else AnyOf(tuple(items))


def _conditions(key: str, operand: object, path: Path, counter: list[int]) -> list[Filter]:
    counter[0] += 1
    if counter[0] > MAX_CONDITIONS:
        raise FilterError(f"a filter has at most {MAX_CONDITIONS} key conditions", path)
    if not isinstance(operand, Mapping):
        return [Equals(key, (_scalar(operand, path),))]
    if not operand:
        raise FilterError("an operator object needs at least one operator", path)
    conditions: list[Filter] = []
    bounds: dict[str, float] = {}
    for operator, argument in operand.items():
        where = (*path, str(operator))
        if operator == "$eq":
            conditions.append(Equals(key, (_scalar(argument, where),)))
        elif operator == "$in":
            if not isinstance(argument, list) or not 1 <= len(argument) <= MAX_IN:
                raise FilterError(f"$in takes a list of 1 to {MAX_IN} values", where)
            values = tuple(_scalar(item, (*where, i)) for i, item in enumerate(argument))
            conditions.append(Equals(key, values))
        elif operator in _RANGE_OPERATORS:
            bounds[str(operator)] = _number(argument, where)
        else:
            raise FilterError(
                f"unknown operator {str(operator)[:32]!r}: expected $eq, $in, $gt, $gte, $lt "
                "or $lte",
                where,
            )
    if bounds:
        conditions.append(_range(key, bounds))
    return conditions


def _range(key: str, bounds: Mapping[str, float]) -> Range:
    lower, lower_inclusive = _tightest(bounds, "$gt", "$gte", max)
    upper, upper_inclusive = _tightest(bounds, "$lt", "$lte", min)
    return Range(key, lower, lower_inclusive, upper, upper_inclusive)


def _tightest(
    bounds: Mapping[str, float], strict: str, inclusive: str, pick: Callable[[float, float], float]
) -> tuple[float | None, bool]:
    if strict in bounds and inclusive in bounds:
        chosen = pick(bounds[strict], bounds[inclusive])
        # on a tie the strict bound is the tighter one
        return chosen, chosen != bounds[strict]
    if strict in bounds:
        return bounds[strict], False
    if inclusive in bounds:
        return bounds[inclusive], True
    return None, True


def _scalar(value: object, path: Path) -> Scalar:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return canonical_number(_number(value, path))
    if isinstance(value, str):
        if len(value) > MAX_STRING_CHARS:
            raise FilterError(f"a string is at most {MAX_STRING_CHARS} characters", path)
        return value
    raise FilterError("a value is a string, a number or a boolean", path)


def _number(value: object, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FilterError("a range bound is a number", path)
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise FilterError("a number must be finite", path)
    return number


def matches(condition: Filter | None, metadata: Metadata) -> bool:
    """Whether a document of ``metadata`` satisfies ``condition`` (None: every document)."""
    if condition is None:
        return True
    if isinstance(condition, AllOf):
        return all(matches(item, metadata) for item in condition.items)
    if isinstance(condition, AnyOf):
        return any(matches(item, metadata) for item in condition.items)
    value = metadata.get(condition.key)
    if value is None:
        return False
    if isinstance(condition, Range):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return condition.holds(float(value))
    wanted = set(condition.terms)
    items: Iterable[Scalar] = value if isinstance(value, list) else [value]
    return any(term(condition.key, item) in wanted for item in items)
