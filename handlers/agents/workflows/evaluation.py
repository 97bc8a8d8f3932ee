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
    MAX_VALUE_BYTES,
    Budget,
    LimitError,
    ValueTooLarge,
    check_items,
    check_number,
    check_power,
    check_string,
    json_size,
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

_TICK_EVERY = 4096


class EvaluationError(ValueError):
    """An expression failed on its values; ``offset`` is where in the expression."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


def evaluate_node(node: Node, scope: Mapping[str, object], budget: Budget | None = None) -> object:
    """The value of ``node``, with ``scope`` giving the root names (``inputs``, ``steps``).

    ``budget`` (a fresh one when None) bounds the time and the values: every value built is
    within the limits of ``limits``, whatever the scope holds, and nothing escapes but
    EvaluationError (a RecursionError, MemoryError or OverflowError becomes one too).
    """
    evaluator = _Evaluator(scope, budget if budget is not None else Budget())
    try:
        return evaluator.evaluate(node)
    except (FunctionError, LimitError) as exc:  # raised without a position: the call's
        raise EvaluationError(str(exc), node.offset) from None
    except RecursionError:
        raise EvaluationError("value nested too deeply", node.offset) from None
    except MemoryError:
        raise EvaluationError("out of memory", node.offset) from None
    except OverflowError as exc:
        raise EvaluationError(str(exc) or "number too large", node.offset) from None


def truthy(value: object) -> bool:
    """False for null, false, 0, '' and empty lists and objects."""
    return bool(value)


class _Evaluator:
    def __init__(self, scope: Mapping[str, object], budget: Budget) -> None:
        self.scope = scope
        self.budget = budget

    def evaluate(self, node: Node) -> object:
        self.budget.check_time()
        if isinstance(node, Const):
            return node.value
        if isinstance(node, Name):
            if node.name not in self.scope:
                raise EvaluationError(f"{node.name!r} is not available here", node.offset)
            return self.scope[node.name]
        if isinstance(node, Member):
            return _member(self.evaluate(node.target), self.evaluate(node.key), node)
        if isinstance(node, Unary):
            return _unary(node, self.evaluate(node.operand))
        if isinstance(node, Binary):
            return self.binary(node)
        if isinstance(node, Conditional):
            condition = self.evaluate(node.condition)
            return self.evaluate(node.then if truthy(condition) else node.otherwise)
        if isinstance(node, Call):
            args = [self.evaluate(arg) for arg in node.args]
            try:
                return call_function(node.function, args, self.budget)
            except (FunctionError, LimitError) as exc:
                raise EvaluationError(str(exc), node.offset) from None
        if isinstance(node, ListLiteral):
            items = [self.evaluate(item) for item in node.items]
            return self.built(items, node)
        return self.mapping(node)

    def built(self, value: object, node: Node) -> object:
        """``value``, a new list or object, if it is within the size and depth limits."""
        try:
            self.budget.check_value(value)
        except LimitError as exc:
            raise EvaluationError(str(exc), node.offset) from None
        return value

    def mapping(self, node: ObjectLiteral) -> object:
        result: dict[str, object] = {}
        for key_node, value_node in node.entries:
            key = self.evaluate(key_node)
            if not isinstance(key, str):
                message = f"object keys must be strings, got {type_name(key)}"
                raise EvaluationError(message, key_node.offset)
            result[key] = self.evaluate(value_node)
        return self.built(result, node)

    def binary(self, node: Binary) -> object:
        left = self.evaluate(node.left)
        if node.op == "and":
            return self.evaluate(node.right) if truthy(left) else left
        if node.op == "or":
            return left if truthy(left) else self.evaluate(node.right)
        right = self.evaluate(node.right)
        try:
            if node.op in ("in", "not in"):
                found = self.contains(right, left)
                return found if node.op == "in" else not found
            if node.op == "+" and isinstance(left, list) and isinstance(right, list):
                return self.concatenate(left, right)
            if node.op == "*" and (isinstance(left, list) or isinstance(right, list)):
                return self.repeat(left, right)
            return _operate(node.op, left, right)
        except ZeroDivisionError:
            raise EvaluationError("division by zero", node.offset) from None
        except (LimitError, OverflowError) as exc:
            raise EvaluationError(str(exc) or "number too large", node.offset) from None
        except TypeError:
            raise EvaluationError(
                f"cannot apply {node.op} to {type_name(left)} and {type_name(right)}", node.offset
            ) from None

    def contains(self, container: object, item: object) -> bool:
        if not isinstance(container, list):
            return _contains(container, item)
        if not isinstance(item, bool | int | float):
            return item in container  # the same as equal() for these items, at C speed
        for index, element in enumerate(container):
            if index % _TICK_EVERY == 0:
                self.budget.check_time()
            if equal(element, item):
                return True
        return False

    def concatenate(self, left: list[object], right: list[object]) -> list[object]:
        """``left + right``, its size known before it is built."""
        check_items(len(left) + len(right))
        left_size, left_height = self.budget.measure(left)
        right_size, right_height = self.budget.measure(right)
        # one pair of brackets less, and a comma more between two non-empty lists
        size = left_size + right_size - 2 + (1 if left and right else 0)
        if size > MAX_VALUE_BYTES:
            raise ValueTooLarge(size, MAX_VALUE_BYTES, exact=True)
        result = left + right
        self.budget.sizer.remember(result, size, max(left_height, right_height))
        return result

    def repeat(self, left: object, right: object) -> list[object]:
        """``items * count``, refused before it is built when it would be too large."""
        items, other = (left, right) if isinstance(left, list) else (right, left)
        assert isinstance(items, list)
        count = _number(other)  # TypeError for a list, a boolean...
        if not isinstance(count, int):
            raise TypeError("*")
        count = max(count, 0)
        check_items(len(items) * count)
        item_size, height = self.budget.measure(items)
        if not items or count == 0:
            size, height = 2, 1
        else:
            size = (item_size - 2) * count + (count - 1) + 2
        if size > MAX_VALUE_BYTES:
            raise ValueTooLarge(size, MAX_VALUE_BYTES, exact=True)
        result = items * count if items else []  # [] * 10**100 would overflow
        self.budget.sizer.remember(result, size, height)
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
    if isinstance(value, str):
        text = repr(value[:200])
    else:
        try:
            json_size(value, 200)
            text = to_text(value)
        except (LimitError, FunctionError):
            text = f"a {type_name(value)}"
    return text if len(text) <= 40 else text[:37] + "..."


def _unary(node: Unary, value: object) -> object:
    if node.op == "not":
        return not truthy(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        message = f"unary {node.op} needs a number, got {type_name(value)}"
        raise EvaluationError(message, node.offset)
    return -value if node.op == "-" else value


def _operate(op: str, left: object, right: object) -> object:
    """Raises TypeError for operand types the operator does not take."""
    if op == "==":
        return equal(left, right)
    if op == "!=":
        return not equal(left, right)
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
    return _arithmetic("+", _number(left), _number(right))


def _multiply(left: object, right: object) -> object:
    """Numbers, or a string repeated (lists are repeated by ``_Evaluator.repeat``)."""
    if isinstance(right, str):
        left, right = right, left
    if isinstance(left, str):
        count = _number(right)
        if not isinstance(count, int):
            raise TypeError("*")
        count = max(count, 0)
        check_string(len(left) * count)
        return left * count if left else ""  # '' * 10**100 would overflow
    return _arithmetic("*", _number(left), _number(right))
