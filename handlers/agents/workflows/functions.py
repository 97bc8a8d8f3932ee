"""The functions expressions may call: a fixed set of pure functions on JSON values."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from handlers.agents.workflows.limits import (
    MAX_INT_BITS,
    MAX_JSON_DEPTH,
    MAX_STRING_CHARS,
    Budget,
    LimitError,
    ValueTooDeep,
    ValueTooLarge,
    check_items,
    check_json_text_depth,
    check_number,
    check_string,
    json_size,
)

_MAX_TEXT_BYTES = 4 * MAX_STRING_CHARS
"""A value larger than this as JSON (UTF-8 bytes) has more than MAX_STRING_CHARS characters as
JSON (a character is at most 4 bytes): its text is refused before it is written."""
_MAX_INT_DIGITS = 309
"""Decimal digits of the largest integer within MAX_INT_BITS (2**1024 is about 1.8e308)."""
_TICK_EVERY = 4096
_LONG_NUMBER = re.compile(rf"(?<!\d)\d{{{_MAX_INT_DIGITS}}}|[eE]\+?0*[1-9]\d\d")
"""Where JSON may hold an integer beyond MAX_INT_BITS or a float beyond the finite range (309
digits, or an exponent of 100 or more): only then are numbers read one by one. Tried only
where a run of digits starts, so the search is linear."""


class FunctionError(ValueError):
    """A function was called with arguments it cannot take."""


def type_name(value: object) -> str:
    """The JSON name of a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def to_text(value: object, budget: Budget | None = None) -> str:
    """How a value reads inside a string: strings as they are, null as '', others as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return to_json(value, budget)


def to_json(value: object, budget: Budget | None = None) -> str:
    """``value`` as compact JSON text, within MAX_STRING_CHARS: its size (shared references
    counted) and depth are checked before it is written, with ``budget``'s memo and deadline
    when given."""
    try:
        if budget is not None:
            budget.measure(value, _MAX_TEXT_BYTES)
        else:
            json_size(value, _MAX_TEXT_BYTES)
    except ValueTooLarge:
        raise LimitError(
            f"string result too long (more than {MAX_STRING_CHARS} characters)"
        ) from None
    except ValueTooDeep as exc:
        raise FunctionError(f"cannot write as JSON: {exc}") from None
    text = _dumps(value)
    check_string(len(text))
    return text


def _dumps(value: object) -> str:
    """Compact JSON of a value already measured."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise FunctionError(f"cannot write as JSON: {exc}") from None


def _string(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise FunctionError(f"{name}() needs a string, got {type_name(value)}")
    return value


def _numbers(name: str, values: list[object]) -> list[int | float]:
    if not set(map(type, values)) <= {int, float}:  # at C speed; bool is not int here
        raise FunctionError(f"{name}() needs numbers")
    return values  # type: ignore[return-value]  # checked just above


def _spread(name: str, args: tuple[object, ...]) -> list[object]:
    """min/max/sum take one list or several values."""
    if len(args) == 1 and isinstance(args[0], list):
        return list(args[0])
    if len(args) == 1:
        raise FunctionError(f"{name}() needs a list or several values")
    return list(args)


def _length(value: object) -> int:
    if isinstance(value, str | list | dict):
        return len(value)
    raise FunctionError(f"len() needs a string, list or object, got {type_name(value)}")


def _contains(container: object, item: object) -> bool:
    if isinstance(container, str):
        return _string("contains", item) in container
    if isinstance(container, list | dict):
        return item in container
    raise FunctionError(f"contains() needs a string, list or object, got {type_name(container)}")


def _join(budget: Budget, items: object, separator: object = "") -> str:
    if not isinstance(items, list):
        raise FunctionError(f"join() needs a list, got {type_name(items)}")
    separator = _string("join", separator)
    if set(map(type, items)) <= {str}:
        texts: list[str] = items  # all strings: checked just above
    else:
        budget.measure(items)  # bounds the text written below
        texts = []
        for index, item in enumerate(items):
            if index % _TICK_EVERY == 0:
                budget.check_time()
            texts.append(item if isinstance(item, str) else "" if item is None else _dumps(item))
    check_string(sum(map(len, texts)) + len(separator) * max(len(texts) - 1, 0))
    return separator.join(texts)


def _split(budget: Budget, text: object, separator: object) -> list[str]:
    separator = _string("split", separator)
    if not separator:
        raise FunctionError("split() needs a non-empty separator")
    text = _string("split", text)
    check_items(text.count(separator) + 1)
    parts = text.split(separator)
    budget.check_value(parts)
    return parts


def _case(name: str, value: object) -> str:
    text = _string(name, value)
    changed = text.lower() if name == "lower" else text.upper()  # 'ß'.upper() is 'SS'
    check_string(len(changed))
    return changed


def _replace(text: object, old: object, new: object) -> str:
    text, old, new = _string("replace", text), _string("replace", old), _string("replace", new)
    count = text.count(old)
    check_string(len(text) + count * (len(new) - len(old)))
    return text.replace(old, new)


def _from_json(budget: Budget, text: object) -> object:
    text = _string("from_json", text)
    try:
        check_json_text_depth(text)  # json.loads recurses once per level
    except ValueTooDeep:
        message = f"from_json(): JSON nested too deeply (more than {MAX_JSON_DEPTH} levels)"
        raise FunctionError(message) from None
    budget.check_time()
    try:
        if _LONG_NUMBER.search(text):
            value = json.loads(
                text, parse_constant=_json_constant, parse_int=_json_int, parse_float=_json_float
            )
        else:  # every number fits: no Python call per number
            value = json.loads(text, parse_constant=_json_constant)
    except (FunctionError, LimitError):
        raise
    except (ValueError, RecursionError) as exc:  # ValueError: also ints of over 4300 digits
        raise FunctionError(f"from_json(): invalid JSON: {exc}") from None
    budget.check_value(value)
    return value


def _json_constant(constant: str) -> object:
    raise FunctionError(f"from_json(): {constant} is not JSON")


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:  # before int(): no quadratic conversion
        raise FunctionError(
            f"from_json(): number too large ({len(text)} digits, max {MAX_INT_BITS} bits)"
        )
    number = int(text)
    if number.bit_length() > MAX_INT_BITS:
        raise FunctionError(f"from_json(): number too large (more than {MAX_INT_BITS} bits)")
    return number


def _json_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise FunctionError(f"from_json(): number out of range: {text[:40]}")
    return number


def _number(value: object) -> int | float:
    if is_number(value):
        return value  # type: ignore[return-value]  # an int or a float
    text = _string("number", value).strip()
    try:
        return check_number(int(text)) if text.lstrip("+-").isdigit() else check_number(float(text))
    except (ValueError, LimitError) as exc:
        raise FunctionError(f"number(): cannot read {text[:40]!r} as a number ({exc})") from None


def _integer(value: object) -> int:
    number = _number(value)
    if isinstance(number, float):
        if not math.isfinite(number):
            raise FunctionError("integer(): not a finite number")
        return int(number)
    return number


def _round(value: object, digits: object = 0) -> int | float:
    if not is_number(value) or not isinstance(digits, int) or isinstance(digits, bool):
        raise FunctionError("round() needs a number and an integer count of digits")
    if digits == 0:
        return round(value)  # type: ignore[call-overload, no-any-return]
    return round(value, max(min(digits, 15), -15))  # type: ignore[call-overload, no-any-return]


def _abs(value: object) -> int | float:
    return abs(_numbers("abs", [value])[0])


def _min(*args: object) -> object:
    values = _spread("min", args)
    if not values:
        raise FunctionError("min() of an empty list")
    return min(_comparable("min", values))


def _max(*args: object) -> object:
    values = _spread("max", args)
    if not values:
        raise FunctionError("max() of an empty list")
    return max(_comparable("max", values))


def _comparable(name: str, values: list[object]) -> list[int | float] | list[str]:
    if set(map(type, values)) == {str}:
        return values  # type: ignore[return-value]  # all strings
    return _numbers(name, values)


def _sum(*args: object) -> int | float:
    return check_number(sum(_numbers("sum", _spread("sum", args))))


def _keys(budget: Budget, value: object) -> list[str]:
    if not isinstance(value, dict):
        raise FunctionError(f"keys() needs an object, got {type_name(value)}")
    keys = list(value)
    budget.check_value(keys)
    return keys


def _values(budget: Budget, value: object) -> list[object]:
    if not isinstance(value, dict):
        raise FunctionError(f"values() needs an object, got {type_name(value)}")
    values = list(value.values())
    budget.check_value(values)
    return values


def _merge(budget: Budget, *objects: object) -> dict[str, object]:
    merged: dict[str, object] = {}
    for value in objects:
        if not isinstance(value, dict):
            raise FunctionError(f"merge() needs objects, got {type_name(value)}")
        merged.update(value)
        check_items(len(merged))
    budget.check_value(merged)
    return merged


def _coalesce(*values: object) -> object:
    return next((value for value in values if value is not None), None)


@dataclass(frozen=True)
class Function:
    implementation: Callable[..., object]
    min_args: int
    max_args: int | None  # None: any number
    budgeted: bool = False
    """The implementation takes the evaluation's Budget first (it builds values or loops)."""


FUNCTIONS: dict[str, Function] = {
    "len": Function(_length, 1, 1),
    "lower": Function(lambda value: _case("lower", value), 1, 1),
    "upper": Function(lambda value: _case("upper", value), 1, 1),
    "trim": Function(lambda value: _string("trim", value).strip(), 1, 1),
    "startswith": Function(
        lambda text, prefix: _string("startswith", text).startswith(_string("startswith", prefix)),
        2,
        2,
    ),
    "endswith": Function(
        lambda text, suffix: _string("endswith", text).endswith(_string("endswith", suffix)),
        2,
        2,
    ),
    "contains": Function(_contains, 2, 2),
    "join": Function(_join, 1, 2, budgeted=True),
    "split": Function(_split, 2, 2, budgeted=True),
    "replace": Function(_replace, 3, 3),
    "json": Function(lambda budget, value: to_json(value, budget), 1, 1, budgeted=True),
    "from_json": Function(_from_json, 1, 1, budgeted=True),
    "string": Function(lambda budget, value: to_text(value, budget), 1, 1, budgeted=True),
    "number": Function(_number, 1, 1),
    "integer": Function(_integer, 1, 1),
    "default": Function(lambda value, fallback: fallback if value is None else value, 2, 2),
    "coalesce": Function(_coalesce, 1, None),
    "round": Function(_round, 1, 2),
    "abs": Function(_abs, 1, 1),
    "min": Function(_min, 1, None),
    "max": Function(_max, 1, None),
    "sum": Function(_sum, 1, None),
    "keys": Function(_keys, 1, 1, budgeted=True),
    "values": Function(_values, 1, 1, budgeted=True),
    "merge": Function(_merge, 1, None, budgeted=True),
}


def call_function(name: str, args: list[object], budget: Budget | None = None) -> object:
    """Call the built-in ``name`` within ``budget`` (a fresh one if None); raises
    FunctionError or LimitError."""
    function = FUNCTIONS[name]
    if len(args) < function.min_args or (
        function.max_args is not None and len(args) > function.max_args
    ):
        expected = (
            f"{function.min_args}"
            if function.min_args == function.max_args
            else f"at least {function.min_args}"
            if function.max_args is None
            else f"{function.min_args} to {function.max_args}"
        )
        raise FunctionError(f"{name}() takes {expected} arguments, got {len(args)}")
    if function.budgeted:
        return function.implementation(budget if budget is not None else Budget(), *args)
    return function.implementation(*args)
