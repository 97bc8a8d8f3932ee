"""The functions expressions may call: a fixed set of pure functions on JSON values."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

from handlers.agents.workflows.limits import (
    LimitError,
    check_items,
    check_number,
    check_string,
)


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


def to_text(value: object) -> str:
    """How a value reads inside a string: strings as they are, null as '', others as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return to_json(value)


def to_json(value: object) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise FunctionError(f"cannot write as JSON: {exc}") from None
    check_string(len(text))
    return text


def _string(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise FunctionError(f"{name}() needs a string, got {type_name(value)}")
    return value


def _numbers(name: str, values: list[object]) -> list[int | float]:
    if not all(is_number(value) for value in values):
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


def _join(items: object, separator: object = "") -> str:
    if not isinstance(items, list):
        raise FunctionError(f"join() needs a list, got {type_name(items)}")
    separator = _string("join", separator)
    texts = [to_text(item) for item in items]
    check_string(sum(map(len, texts)) + len(separator) * max(len(texts) - 1, 0))
    return separator.join(texts)


def _split(text: object, separator: object) -> list[str]:
    separator = _string("split", separator)
    if not separator:
        raise FunctionError("split() needs a non-empty separator")
    return _string("split", text).split(separator)


def _replace(text: object, old: object, new: object) -> str:
    text, old, new = _string("replace", text), _string("replace", old), _string("replace", new)
    count = text.count(old)
    check_string(len(text) + count * (len(new) - len(old)))
    return text.replace(old, new)


def _from_json(text: object) -> object:
    def refuse(constant: str) -> object:
        raise FunctionError(f"from_json(): {constant} is not JSON")

    try:
        return json.loads(_string("from_json", text), parse_constant=refuse)
    except json.JSONDecodeError as exc:
        raise FunctionError(f"from_json(): invalid JSON: {exc}") from None


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
    if all(isinstance(value, str) for value in values):
        return values  # type: ignore[return-value]  # all strings
    return _numbers(name, values)


def _sum(*args: object) -> int | float:
    return check_number(sum(_numbers("sum", _spread("sum", args))))


def _keys(value: object) -> list[str]:
    if not isinstance(value, dict):
        raise FunctionError(f"keys() needs an object, got {type_name(value)}")
    return list(value)


def _values(value: object) -> list[object]:
    if not isinstance(value, dict):
        raise FunctionError(f"values() needs an object, got {type_name(value)}")
    return list(value.values())


def _merge(*objects: object) -> dict[str, object]:
    merged: dict[str, object] = {}
    for value in objects:
        if not isinstance(value, dict):
            raise FunctionError(f"merge() needs objects, got {type_name(value)}")
        merged.update(value)
    check_items(len(merged))
    return merged


def _coalesce(*values: object) -> object:
    return next((value for value in values if value is not None), None)


@dataclass(frozen=True)
class Function:
    implementation: Callable[..., object]
    min_args: int
    max_args: int | None  # None: any number


FUNCTIONS: dict[str, Function] = {
    "len": Function(_length, 1, 1),
    "lower": Function(lambda value: _string("lower", value).lower(), 1, 1),
    "upper": Function(lambda value: _string("upper", value).upper(), 1, 1),
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
    "join": Function(_join, 1, 2),
    "split": Function(_split, 2, 2),
    "replace": Function(_replace, 3, 3),
    "json": Function(to_json, 1, 1),
    "from_json": Function(_from_json, 1, 1),
    "string": Function(lambda value: _checked_text(to_text(value)), 1, 1),
    "number": Function(_number, 1, 1),
    "integer": Function(_integer, 1, 1),
    "default": Function(lambda value, fallback: fallback if value is None else value, 2, 2),
    "coalesce": Function(_coalesce, 1, None),
    "round": Function(_round, 1, 2),
    "abs": Function(_abs, 1, 1),
    "min": Function(_min, 1, None),
    "max": Function(_max, 1, None),
    "sum": Function(_sum, 1, None),
    "keys": Function(_keys, 1, 1),
    "values": Function(_values, 1, 1),
    "merge": Function(_merge, 1, None),
}


def _checked_text(text: str) -> str:
    check_string(len(text))
    return text


def call_function(name: str, args: list[object]) -> object:
    """Call the built-in ``name``; raises FunctionError or LimitError."""
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
    return function.implementation(*args)
