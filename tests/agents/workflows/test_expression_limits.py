"""The expression language's bounds against hostile expressions ("bombs"): sizes counted with
shared references, JSON nesting, time budgets, and the caps on step data. Each bomb is refused
with a clear error at parse time (with its position) and at run time (a failed step), never
with a RecursionError, a MemoryError or a blocked process."""

from __future__ import annotations

import json
import textwrap

import pytest

from handlers.agents.workflows import (
    EvaluationError,
    ExpressionError,
    MemoryJournal,
    StepContext,
    WorkflowEngine,
    WorkflowValidationError,
    compile_expression,
    evaluate,
    limits,
    parse_workflow,
    standard_runners,
)
from handlers.agents.workflows.engine import WorkflowOutcome
from handlers.agents.workflows.limits import (
    MAX_JSON_DEPTH,
    MAX_STEP_DATA_BYTES,
    MAX_VALUE_BYTES,
    ValueTooDeep,
    ValueTooLarge,
    check_json_text_depth,
    json_size,
)
from tests.agents.workflows.support import workflow

JSON_BOMB = "json([[0]*100000]*100000)"
"""32 characters: 10^10 cells once written, from two lists of 100000 references."""
NESTING_BOMB = "from_json('[' * 100000 + ']' * 100000)"
"""A RecursionError in json.loads, were the depth not checked before."""
SLOW_PART = "len(from_json('[' + '[],' * 333332 + '[]]'))"
"""Parses and measures 333333 lists: a fraction of a second."""
TIME_BOMB = " + ".join([SLOW_PART] * 40)
"""Each part is cheap, all of them together are not."""


def deep_list(levels: int) -> list[object]:
    value: list[object] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def compile_error(source: str) -> ExpressionError:
    with pytest.raises(ExpressionError) as caught:
        compile_expression(source)
    return caught.value


# -- parse time: constant bombs are parse errors at their position -------------------------------


@pytest.mark.parametrize(
    ("source", "message", "offset"),
    [
        (JSON_BOMB, "value too large (20000200001 bytes as JSON, max 10000000)", 17),
        (NESTING_BOMB, "from_json(): JSON nested too deeply (more than 100 levels)", 0),
        ("upper('ß' * 1000000)", "string result too long (2000000 characters", 0),
        ("lower('İ' * 600000)", "string result too long (1200000 characters", 0),
        ("split('a' * 1000000, 'a')", "result has too many items (1000001, max 100000)", 0),
        ("from_json('1' * 100000)", "from_json(): number too large (100000 digits", 0),
        ("from_json('1' * 5000)", "from_json(): number too large (5000 digits", 0),
        ("from_json('[1e400]')", "from_json(): number out of range", 0),
        ("[[[0]*1000]*1000]*1000", "value too large (2002002001 bytes as JSON", 17),
        ("[['x' * 1000000] * 10]", "value too large (10000031 bytes as JSON", 17),
        ("string([['x' * 100000] * 10] * 10)", "value too large (10000321 bytes", 29),
        ("join(['ab' * 500000] * 10, ',')", "value too large (10000031 bytes", 21),
        ("json([['x' * 400000] * 10])", "string result too long", 0),
        (
            "merge(" + ", ".join(f"{{'k{index}': 'x' * 999999}}" for index in range(11)) + ")",
            "value too large (at least",
            0,
        ),
        ("[1] + [0] * 100000", "result has too many items (100001, max 100000)", 4),
    ],
)
def test_constant_bombs_are_parse_errors_at_their_position(
    source: str, message: str, offset: int
) -> None:
    error = compile_error(source)
    assert message in error.message
    assert error.offset == offset


def test_a_slow_expression_runs_out_of_its_time_budget() -> None:
    assert len(TIME_BOMB) <= limits.MAX_EXPRESSION_CHARS
    error = compile_error(TIME_BOMB)
    assert error.message == "expression took longer than 2 s"
    assert 0 < error.offset < len(TIME_BOMB)


def test_the_bombs_are_workflow_issues_with_line_and_column() -> None:
    text = textwrap.dedent(
        f"""\
        name: bombs
        steps:
          - id: one
            type: transform
            value: ${{{{ {JSON_BOMB} }}}}
          - id: two
            type: transform
            value: "text ${{{{ {NESTING_BOMB} }}}}"
        """
    )
    with pytest.raises(WorkflowValidationError) as caught:
        parse_workflow(text)
    assert [str(issue) for issue in caught.value.issues] == [
        "line 5, column 33: invalid expression: value too large (20000200001 bytes as JSON, "
        "max 10000000)",
        "line 8, column 22: invalid expression: from_json(): JSON nested too deeply (more than "
        "100 levels)",
    ]


def test_all_the_constant_parts_of_a_definition_share_one_time_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "MAX_TOTAL_EVALUATION_SECONDS", 0.5)
    steps = "".join(
        f"  - id: s{index}\n    type: transform\n    value: ${{{{ {SLOW_PART} }}}}\n"
        for index in range(40)
    )
    with pytest.raises(WorkflowValidationError) as caught:
        parse_workflow(f"name: slow\nsteps:\n{steps}")
    # One issue, at the expression that was running out of time; the later ones are only
    # parsed (their constant parts are not evaluated once the budget is spent).
    [issue] = caught.value.issues
    assert issue.message == (
        "invalid expression: evaluating the constant parts of the workflow's expressions took "
        "longer than 0.5 s"
    )
    assert (issue.line - 5) % 3 == 0 and issue.column >= 14  # in one of the expressions


def test_yaml_nested_too_deeply_is_an_issue_with_its_position() -> None:
    for levels in (150, 100_000):  # composed then checked; too deep for the composer
        text = "name: deep\nsteps:\n  - id: a\n    type: transform\n    value: "
        text += "[" * levels + "]" * levels + "\n"
        with pytest.raises(WorkflowValidationError) as caught:
            parse_workflow(text)
        [issue] = caught.value.issues
        assert issue.message == "nested too deeply (more than 100 levels of lists and mappings)"
        assert (issue.line, issue.column) == (5, 109)  # the 101st level: steps, a step, value


# -- run time: the same bombs on inputs fail the step -------------------------------------------


async def run_transform(expression: str, inputs: dict[str, object]) -> tuple[str, str]:
    """Run a one-step workflow whose transform evaluates ``expression``; (status, error)."""
    declared = "".join(f"  {name}: {_type(value)}\n" for name, value in inputs.items())
    definition = workflow(
        f"name: bomb\ninputs:\n{declared}steps:\n  - id: boom\n    type: transform\n"
        f"    value: ${{{{ {expression} }}}}\n"
    )
    engine = WorkflowEngine(standard_runners())
    outcome = await engine.run(definition, inputs, journal=MemoryJournal(), execution_id="x")
    step = outcome.steps["boom"]
    assert outcome.status == "failed" and step.status == "failed", outcome
    assert outcome.error == f"step 'boom' failed: {step.error}"
    assert step.error is not None
    return step.status, step.error


def _type(value: object) -> str:
    return {int: "integer", str: "string", list: "array", dict: "object"}[type(value)]


@pytest.mark.parametrize(
    ("expression", "inputs", "message"),
    [
        (
            "json([[0] * inputs.n] * inputs.n)",
            {"n": 100_000},
            "value too large (20000200001 bytes as JSON, max 10000000)",
        ),
        (
            "from_json('[' * inputs.n + ']' * inputs.n)",
            {"n": 100_000},
            "from_json(): JSON nested too deeply (more than 100 levels)",
        ),
        ("upper(inputs.s)", {"s": "ß" * 1_000_000}, "string result too long (2000000 characters"),
        ("split(inputs.s, 'a')", {"s": "a" * 1_000_000}, "result has too many items (1000001"),
        ("from_json(inputs.s)", {"s": "1" * 100_000}, "from_json(): number too large"),
        ("[[[0] * inputs.n] * inputs.n] * inputs.n", {"n": 1000}, "value too large"),
        ("json(inputs.deep)", {"deep": deep_list(5000)}, "cannot write as JSON: value nested"),
        ("[inputs.deep]", {"deep": deep_list(100)}, "value nested too deeply (more than 100"),
        ("inputs.a == inputs.b", {"a": deep_list(100_000), "b": deep_list(100_000)}, "nested"),
        ("[inputs.s] * 11", {"s": "x" * 999_990}, "value too large (10999924 bytes as JSON"),
        ("'x ' + inputs.s", {"s": "x" * 1_000_000}, "string result too long"),
    ],
)
async def test_bombs_on_inputs_fail_the_step_with_a_clear_error(
    expression: str, inputs: dict[str, object], message: str
) -> None:
    _, error = await run_transform(expression, inputs)
    assert error.startswith(f"cannot evaluate the step's parameters: ${{{{ {expression} }}}}: ")
    assert message in error
    assert "Recursion" not in error and "Memory" not in error


async def test_a_slow_expression_on_inputs_fails_the_step_in_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "MAX_EVALUATION_SECONDS", 0.1)
    part = "len(from_json(inputs.text))"
    text = "[" + "[]," * 333_332 + "[]]"
    _, error = await run_transform(" + ".join([part] * 10), {"text": text})
    assert error.endswith(": expression took longer than 0.1 s")


# -- step data caps --------------------------------------------------------------------------


class FixedAgent:
    """An agent step runner that returns ``output``."""

    def __init__(self, output: object) -> None:
        self.output = output

    async def run(self, params: object, context: StepContext) -> object:
        return self.output


AGENT_STEP = "  - id: ask\n    type: agent\n    agent: big\n"


async def run_agent(
    output: object, rest: str = "", overrides: dict[str, object] | None = None
) -> WorkflowOutcome:
    definition = workflow(f"name: caps\nsteps:\n{AGENT_STEP}{rest}")
    engine = WorkflowEngine({"agent": FixedAgent(output)})
    return await engine.run(
        definition, {}, journal=MemoryJournal(), execution_id="x", overrides=overrides
    )


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (["x" * 1000] * 17_000, "output too large (at least "),
        ([[0] * 100_000] * 100_000, "output too large (at least "),
        (deep_list(MAX_JSON_DEPTH + 1), "output nested too deeply (more than 100 levels)"),
        (deep_list(100_000), "output nested too deeply (more than 100 levels)"),
    ],
)
async def test_a_step_output_over_the_caps_fails_the_step(output: object, message: str) -> None:
    outcome = await run_agent(output)
    step = outcome.steps["ask"]
    assert step.status == "failed" and step.output is None and step.error is not None
    assert step.error.startswith(message), step.error
    assert f"max {MAX_STEP_DATA_BYTES}" in step.error or "deeply" in step.error
    assert outcome.status == "failed"
    assert outcome.error == f"step 'ask' failed: {step.error}"


async def test_output_within_the_caps_is_recorded() -> None:
    output = {"rows": [{"id": index, "name": "x" * 50} for index in range(50_000)]}
    outcome = await run_agent(output, "result: ${{ len(steps.ask.output.rows) }}\n")
    assert outcome.status == "completed"
    assert outcome.result == 50_000
    assert outcome.steps["ask"].output is output


async def test_a_result_over_the_cap_fails_the_workflow() -> None:
    nine_mb = "x" * 9_000_000
    outcome = await run_agent(
        nine_mb, "result:\n  a: ${{ steps.ask.output }}\n  b: ${{ steps.ask.output }}\n"
    )
    assert outcome.steps["ask"].status == "completed"
    assert outcome.status == "failed"
    assert outcome.result is None
    assert outcome.error is not None
    assert outcome.error.startswith("result too large (at least ")
    assert outcome.error.endswith(f"max {MAX_STEP_DATA_BYTES})")


async def test_a_step_input_over_the_cap_fails_the_step() -> None:
    rest = (
        "  - id: twice\n    type: agent\n    agent: big\n    input:\n"
        "      a: ${{ steps.ask.output }}\n      b: ${{ steps.ask.output }}\n"
    )
    outcome = await run_agent("x" * 9_000_000, rest)
    step = outcome.steps["twice"]
    assert step.status == "failed" and step.error is not None
    assert step.error.startswith("cannot evaluate the step's parameters: input too large (")


async def test_an_override_over_the_cap_fails_the_step_and_the_workflow() -> None:
    rest = "  - id: after\n    type: transform\n    value: ${{ steps.ask.output }}\n"
    outcome = await run_agent(1, rest, overrides={"ask": [[0] * 100_000] * 100_000})
    step = outcome.steps["ask"]
    assert step.status == "failed" and step.error is not None
    assert step.error.startswith("output too large (at least ")
    assert outcome.steps["after"].status == "skipped"
    assert outcome.status == "failed"


# -- the helpers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        [1, 2.5, -3, None, False, 'a"b\\c\n\x01é€😀\u2028'],
        {"k\x02": [{}, [], ""], "ü": {"x": [1] * 40}, "": "x" * 300},
        ["é" * 40] * 40,
        [{"id": index, "name": f"n{index}"} for index in range(100)],
        {f"key {index}": index for index in range(50)},
        [1e300, -0.0, 12345678901234567890],
    ],
)
def test_json_size_is_the_size_of_compact_json(value: object) -> None:
    written = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert json_size(value, 10**9) == len(written.encode())


def test_json_size_counts_shared_references_without_walking_them() -> None:
    with pytest.raises(ValueTooLarge) as caught:
        json_size([[0] * 100_000] * 100_000)  # 10^10 cells: refused at once
    assert caught.value.size > MAX_VALUE_BYTES and not caught.value.exact
    shared = ["x" * 1000] * 10_000
    assert json_size(shared, 10**9) == 10_000 * 1002 + 9_999 + 2
    with pytest.raises(ValueTooDeep):
        json_size(deep_list(100_000))  # never a RecursionError
    assert json_size(deep_list(MAX_JSON_DEPTH)) == 2 * MAX_JSON_DEPTH


@pytest.mark.parametrize(
    ("text", "deep"),
    [
        ("[" * 101 + "]" * 101, True),
        ("[" * 100 + "]" * 100, False),
        ("[" * 100_000, True),
        ('{"a": "' + "[" * 1000 + '"}', False),  # brackets in strings do not count
        ('["\\"' + "[" * 1000 + '"]', False),  # nor after an escaped quote
        ("[" + '{"a": [{"b": []}]}, ' * 1000 + "1]", False),
        ("{}" * 5000, False),
        # Linear however the quotes are escaped (a naive pattern rescans from every quote).
        ("[" * 101 + '"' + '\\"' * 500_000, True),
        ('["' + '\\"' * 500_000 + "[" * 200, False),  # an unterminated string swallows the rest
        ('["' + '\\"' * 500_000 + "\\", False),
    ],
)
def test_check_json_text_depth(text: str, deep: bool) -> None:
    for given in (text, text.encode()):
        if deep:
            with pytest.raises(ValueTooDeep):
                check_json_text_depth(given)
        else:
            check_json_text_depth(given)


def test_a_deep_value_in_the_scope_is_an_evaluation_error() -> None:
    scope = {"inputs": {"a": deep_list(100_000), "b": deep_list(100_000)}, "steps": {}}
    for source in ("json(inputs.a)", "inputs.a == inputs.b", "[inputs.a]", "string(inputs.a)"):
        with pytest.raises(EvaluationError):
            evaluate(compile_expression(source), scope)
