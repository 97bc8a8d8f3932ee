"""Evaluating an expression tree on JSON values, within the limits of ``limits``.

Only JSON values ever flow through here (null, booleans, numbers, strings, lists, objects):
key access reads dict keys and list items, never attributes of Python objects.
"""

from __future__ import annotations

from collections.abc import Mapping

from handlers.agents.workflows.functions import (
    FunctionError,
    call_function,
    to_text,
    type_name,
)
from handlers.agents.workflows.limits import (
    LimitError,
    check_items,
    check_number,
    check_power,
    check_string,
)
from handlers.agents.workflows.syntax import (
    Binary,
    Call,
    Conditional,
    Const,
    ListLiteral,
    Member,
    Name,
    Node,
    ObjectLiteral,
    Unary,
)


class EvaluationError(ValueError):
    """An expression failed on its values; ``offset`` is where in the expression."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


def evaluate_node(node: Node, scope: Mapping[str, object]) -> object:
    """The value of ``node``, with ``scope`` giving the root names (``inputs``, ``steps``)."""
    try:
        return _evaluate(node, scope)
    except (FunctionError, LimitError) as exc:  # raised without a position: the call's
        raise EvaluationError(str(exc), node.offset) from None


def _evaluate(node: Node, scope: Mapping[str, object]) -> object:
    if isinstance(node, Const):
        return node.value
    if isinstance(node, Name):
        if node.name not in scope:
            raise EvaluationError(f"{node.name!r} is not available here", node.offset)
        return scope[node.name]
    if isinstance(node, Member):
        return _member(_evaluate(node.target, scope), _evaluate(node.key, scope), node)
    if isinstance(node, Unary):
        return _unary(node, _evaluate(node.operand, scope))
    if isinstance(node, Binary):
        return _binary(node, scope)
    if isinstance(node, Conditional):
        branch = node.then if truthy(_evaluate(node.condition, scope)) else node.otherwise
        return _evaluate(branch, scope)
    if isinstance(node, Call):
        args = [_evaluate(arg, scope) for arg in node.args]
        try:
            return call_function(node.function, args)
        except (FunctionError, LimitError) as exc:
            raise EvaluationError(str(exc), node.offset) from None
    if isinstance(node, ListLiteral):
        return [_evaluate(item, scope) for item in node.items]
    return _object(node, scope)


def truthy(value: object) -> bool:
    """False for null, false, 0, '' and empty lists and objects."""
    return bool(value)


def _object(node: ObjectLiteral, scope: Mapping[str, object]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key_node, value_node in node.entries:
        key = _evaluate(key_node, scope)
        if not isinstance(key, str):
            message = f"object keys must be strings, got {type_name(key)}"
            raise EvaluationError(message, key_node.offset)
        result[key] = _evaluate(value_node, scope)
    return result


def _member(target: object, key: object, node: Member) -> object:
    """``target[key]``: a missing key or index is null; the wrong kind of key is an error."""
    if isinstance(target, dict):
        if not isinstance(key, str):
            raise EvaluationError(f"object keys are strings, got {type_name(key)}", node.offset)
        return target.get(key)
    if isinstance(target, list | str):
        if not isinstance(key, int) or isinstance(key, bool):
            raise EvaluationError(
                f"a {type_name(target)} is indexed by an integer, got {type_name(key)} "
                f"{_brief(key)}",
                node.offset,
            )
        return target[key] if -len(target) <= key < len(target) else None
    raise EvaluationError(f"cannot read {_brief(key)} of {type_name(target)}", node.offset)


def _brief(value: object) -> str:
    text = to_text(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _unary(node: Unary, value: object) -> object:
    if node.op == "not":
        return not truthy(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        message = f"unary {node.op} needs a number, got {type_name(value)}"
        raise EvaluationError(message, node.offset)
    return -value if node.op == "-" else value


def _binary(node: Binary, scope: Mapping[str, object]) -> object:
    left = _evaluate(node.left, scope)
    if node.op == "and":
        return _evaluate(node.right, scope) if truthy(left) else left
    if node.op == "or":
        return left if truthy(left) else _evaluate(node.right, scope)
    right = _evaluate(node.right, scope)
    try:
        return _operate(node.op, left, right)
    except ZeroDivisionError:
        raise EvaluationError("division by zero", node.offset) from None
    except (LimitError, OverflowError) as exc:
        raise EvaluationError(str(exc) or "number too large", node.offset) from None
    except TypeError:
        raise EvaluationError(
            f"cannot apply {node.op} to {type_name(left)} and {type_name(right)}", node.offset
        ) from None


def _operate(op: str, left: object, right: object) -> object:
    """Raises TypeError for operand types the operator does not take."""
    if op == "==":
        return equal(left, right)
    if op == "!=":
        return not equal(left, right)
    if op in ("in", "not in"):
        found = _contains(right, left)
        return found if op == "in" else not found
    if op in ("<", "<=", ">", ">="):
        return _compare(op, left, right)
    if op == "+":
        return _add(left, right)
    if op == "*":
        return _multiply(left, right)
    return _arithmetic(op, _number(left), _number(right))


def _number(value: object) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError("not a number")
    return value


def _arithmetic(op: str, a: int | float, b: int | float) -> int | float:
    if op == "+":
        return check_number(a + b)
    if op == "-":
        return check_number(a - b)
    if op == "*":
        return check_number(a * b)
    if op == "/":
        return check_number(a / b)
    if op == "//":
        return check_number(a // b)
    if op == "%":
        return check_number(a % b)
    check_power(a, b)
    result = a**b
    if not isinstance(result, int | float):  # a negative number to a fractional power
        raise LimitError("result is not a real number")
    return check_number(result)


def equal(left: object, right: object) -> bool:
    """JSON equality: a boolean never equals a number (Python's True == 1 does not hold)."""
    if isinstance(left, bool) != isinstance(right, bool):
        return False
    return left == right


def _contains(container: object, item: object) -> bool:
    if isinstance(container, str):
        if not isinstance(item, str):
            raise TypeError("in")
        return item in container
    if isinstance(container, list):
        return any(equal(element, item) for element in container)
    if isinstance(container, dict):
        return item in container
    raise TypeError("in")


def _compare(op: str, left: object, right: object) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        pair: tuple[str, str] | tuple[int | float, int | float] = (left, right)
    else:
        pair = (_number(left), _number(right))
    a, b = pair
    if op == "<":
        return a < b  # type: ignore[operator]  # both strings or both numbers
    if op == "<=":
        return a <= b  # type: ignore[operator]
    if op == ">":
        return a > b  # type: ignore[operator]
    return a >= b  # type: ignore[operator]


def _add(left: object, right: object) -> object:
    if isinstance(left, str) and isinstance(right, str):
        check_string(len(left) + len(right))
        return left + right
    if isinstance(left, list) and isinstance(right, list):
        check_items(len(left) + len(right))
        return left + right
    return _arithmetic("+", _number(left), _number(right))


def _multiply(left: object, right: object) -> object:
    if isinstance(right, str | list):
        left, right = right, left
    if isinstance(left, str | list):
        count = _number(right)
        if not isinstance(count, int):
            raise TypeError("*")
        count = max(count, 0)
        if isinstance(left, str):
            check_string(len(left) * count)
        else:
            check_items(len(left) * count)
        return left * count
    return _arithmetic("*", _number(left), _number(right))
