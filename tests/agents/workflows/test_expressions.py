"""The expression language: values, types, functions, errors and the sandbox."""

from __future__ import annotations

import time

import pytest

from handlers.agents.workflows import (
    EvaluationError,
    ExpressionError,
    compile_expression,
    evaluate,
)
from handlers.agents.workflows.templates import RenderError, compile_string, render

SCOPE: dict[str, object] = {
    "inputs": {
        "amount": 1200,
        "name": "Ada",
        "tags": ["a", "b"],
        "rate": 0.5,
        "none": None,
        "empty": [],
    },
    "steps": {"fetch": {"output": {"items": [{"id": 7}, {"id": 9}]}, "status": "completed"}},
}


def value(source: str) -> object:
    return evaluate(compile_expression(source), SCOPE)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("inputs.amount * 2 + 1", 2401),
        ("inputs.amount / 100", 12.0),
        ("inputs.amount // 7 % 10", 1),
        ("-2 ** 2", -4),
        ("2 ** 3 ** 2", 512),
        ("inputs.rate * 4", 2.0),
        ("'x' + inputs.name", "xAda"),
        ("inputs.tags + ['c']", ["a", "b", "c"]),
        ("'ab' * 3", "ababab"),
        ("inputs.amount > 1000 and inputs.name == 'Ada'", True),
        ("inputs.none or 'fallback'", "fallback"),
        ("not inputs.tags", False),
        ("'b' in inputs.tags", True),
        ("'z' not in inputs.tags", True),
        ("'da' in inputs.name", True),
        ("'big' if inputs.amount > 1000 else 'small'", "big"),
        ("steps.fetch.output.items[1].id", 9),
        ("steps.fetch.output.items[-1]['id']", 9),
        ("steps.fetch.output.items[5]", None),
        ("inputs.missing", None),
        ("inputs['na' + 'me']", "Ada"),
        (
            "{'total': inputs.amount, 'ok': true, 'none': null}",
            {"total": 1200, "ok": True, "none": None},
        ),
        ("1 == true", False),
        ("1 == 1.0", True),
        ("'\\u00e9\\n'", "é\n"),
    ],
)
def test_values_and_operators(source: str, expected: object) -> None:
    result = value(source)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("len(inputs.tags)", 2),
        ("len(inputs.name)", 3),
        ("lower(inputs.name) + upper('x')", "adaX"),
        ("trim('  x ')", "x"),
        ("join(inputs.tags, ', ')", "a, b"),
        ("join([1, null, 'x', {'a': 1}])", '1x{"a":1}'),
        ("split('a,b', ',')", ["a", "b"]),
        ("replace('aXbX', 'X', '-')", "a-b-"),
        ("json({'a': [1, true]})", '{"a":[1,true]}'),
        ("from_json('{\"a\": 2}').a", 2),
        ("default(inputs.none, 5)", 5),
        ("default(0, 5)", 0),
        ("coalesce(null, inputs.none, 'c', 'd')", "c"),
        ("round(2.567, 2)", 2.57),
        ("round(2.5)", 2),
        ("abs(-3)", 3),
        ("min(3, 1, 2)", 1),
        ("max([1.5, 4])", 4),
        ("min(['b', 'a'])", "a"),
        ("sum([1, 2, 3.5])", 6.5),
        ("contains(inputs.tags, 'a')", True),
        ("contains('abc', 'bc')", True),
        ("startswith(inputs.name, 'A')", True),
        ("endswith(inputs.name, 'x')", False),
        ("keys({'a': 1, 'b': 2})", ["a", "b"]),
        ("values({'a': 1})", [1]),
        ("merge({'a': 1}, {'b': 2, 'a': 3})", {"a": 3, "b": 2}),
        ("string(12)", "12"),
        ("number('2.5') + integer('3')", 5.5),
        ("integer(7.9)", 7),
    ],
)
def test_functions(source: str, expected: object) -> None:
    assert value(source) == expected


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("inputs.name + 1", "cannot apply + to string and number"),
        ("inputs.tags < 3", "cannot apply < to list and number"),
        ("inputs.amount / 0", "division by zero"),
        ("inputs.amount.x", "cannot read 'x' of number"),
        ("inputs.tags['a']", "a list is indexed by an integer, got string"),
        ("len(inputs.amount)", "len() needs a string, list or object, got number"),
        ("lower(inputs.name, 2)", "lower() takes 1 arguments, got 2"),
        ("from_json(inputs.name)", "from_json(): invalid JSON"),
        ("number(inputs.name)", "number(): cannot read 'Ada' as a number"),
        ("min(inputs.empty)", "min() of an empty list"),
        ("inputs.name * inputs.amount * inputs.amount", "string result too long"),
        ("inputs.tags * 10 ** 6", "result has too many items"),
        ("inputs.amount ** 500", "number result too large"),
        ("inputs.rate * 1e308 * 10", "number result is not finite"),
    ],
)
def test_evaluation_errors_are_clear(source: str, message: str) -> None:
    expression = compile_expression(source)
    with pytest.raises(EvaluationError) as caught:
        evaluate(expression, SCOPE)
    assert message in caught.value.message


@pytest.mark.parametrize(
    ("source", "message", "offset"),
    [
        ("__import__('os')", "names starting with '__' are not allowed: __import__", 0),
        ("().__class__.__bases__", "empty parentheses", 0),
        ("inputs.__class__", "names starting with '__' are not allowed: __class__", 7),
        ("inputs['a'].__dict__", "names starting with '__' are not allowed", 12),
        ("getattr(inputs, 'x')", "unknown function 'getattr'", 0),
        ("eval('1')", "unknown function 'eval'", 0),
        ("open('/etc/passwd')", "unknown function 'open'", 0),
        ("lambda: 1", "lambdas are not supported", 0),
        ("[x for x in inputs.tags]", "comprehensions and loops are not supported", 3),
        ("{k: 1 for k in inputs.tags}", "comprehensions and loops are not supported", 6),
        ("import os", "imports are not supported", 0),
        ("'a' * 10**9", "string result too long (1000000000 characters, max 1000000)", 4),
        ("10**10**10", "number result too large", 2),
        ("(" * 100 + "1" + ")" * 100, "expression nested too deeply (max 32)", 32),
        ("[" * 40 + "]" * 40, "expression nested too deeply", 16),
        ("-" * 50 + "1", "expression nested too deeply", 31),
        ("1 + " * 1000 + "1", "expression too long (4001 characters, max 2000)", 0),
        ("inputs.amount(1)", "only the built-in functions can be called", 13),
        ("len", "function 'len' must be called", 0),
        ("os.system('x')", "unknown name 'os'", 0),
        ("1 < 2 < 3", "chained comparisons are not supported", 6),
        ("'abc", "unterminated string", 0),
        ("1 +", "expected a value, found the end of the expression", 3),
        ("inputs.amount @ 2", "unexpected character '@'", 14),
        ("True", "use true", 0),
        ("x is None", "'is' is not supported", 2),
        ("'%s' % 1", "cannot apply % to string and number", 5),
        ("", "empty expression", 0),
    ],
)
def test_invalid_and_escaping_expressions_are_rejected(
    source: str, message: str, offset: int
) -> None:
    started = time.monotonic()
    with pytest.raises(ExpressionError) as caught:
        compile_expression(source)
    assert message in caught.value.message
    assert caught.value.offset == offset
    assert time.monotonic() - started < 0.5  # refused up front, never computed


def test_constant_parts_are_checked_when_compiled() -> None:
    for source in ("lower(1, 2)", "from_json('{') + inputs.x", "inputs.x + min([])"):
        with pytest.raises(ExpressionError):
            compile_expression(source)


def test_keys_are_data_never_attributes() -> None:
    # A dunder-looking key read by subscript is a plain (missing) dict key: null.
    assert value("inputs['__class__']") is None
    assert value("inputs['items']") is None


def test_references_name_the_inputs_and_steps_used() -> None:
    expression = compile_expression("steps.fetch.output.items[inputs.i].id + inputs['n']")
    found = {(reference.root, reference.path) for reference in expression.references}
    assert found == {
        ("steps", ("fetch", "output", "items", None)),
        ("inputs", ("i",)),
        ("inputs", ("n",)),
    }


def test_a_whole_string_template_keeps_the_value_type() -> None:
    assert render(compile_string("${{ steps.fetch.output }}"), SCOPE) == {
        "items": [{"id": 7}, {"id": 9}]
    }
    assert render(compile_string("${{ inputs.amount }}"), SCOPE) == 1200
    assert render(compile_string(" ${{ inputs.amount }}"), SCOPE) == " 1200"
    text = "n=${{ inputs.name }} t=${{ inputs.tags }} none=${{ inputs.none }} $${{ kept }}"
    assert render(compile_string(text), SCOPE) == 'n=Ada t=["a","b"] none= ${{ kept }}'
    assert render(compile_string("${{ {'a': {'b': 1}} }}"), SCOPE) == {"a": {"b": 1}}


def test_template_errors_give_their_offset_and_expression() -> None:
    with pytest.raises(ExpressionError) as caught:
        compile_string("abc ${{ inputs.x + }}")
    assert caught.value.offset == len("abc ${{ inputs.x +")  # where the value is missing
    with pytest.raises(ExpressionError, match="without its closing"):
        compile_string("abc ${{ inputs.x ")
    with pytest.raises(RenderError, match=r"\$\{\{ inputs.name \+ 1 \}\}: cannot apply \+"):
        render(compile_string("${{ inputs.name + 1 }}"), SCOPE)
