"""Reading workflow YAML: a complete definition, and every validation error at its line."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from handlers.agents.workflows import Issue, WorkflowValidationError, parse_workflow
from handlers.agents.workflows.definition import AgentCall, BlockCall, HttpRequest
from handlers.agents.workflows.templates import Literal, MappingTemplate

README = Path(__file__).parents[3] / "handlers" / "agents" / "workflows" / "README.md"


def readme_example() -> str:
    """The complete example of the README (its first yaml block)."""
    match = re.search(r"```yaml\n(.*?)```", README.read_text(), re.DOTALL)
    assert match is not None
    return match.group(1)


def issues_of(text: str) -> list[Issue]:
    with pytest.raises(WorkflowValidationError) as caught:
        parse_workflow(textwrap.dedent(text))
    return list(caught.value.issues)


def only_issue(text: str) -> Issue:
    issues = issues_of(text)
    assert len(issues) == 1, issues
    return issues[0]


def test_the_readme_example_parses_completely() -> None:
    definition = parse_workflow(readme_example())

    assert definition.name == "invoice-approval"
    assert definition.kind == "workflow"
    assert definition.title == "Invoice approval"
    assert [(i.name, i.type, i.required, i.default) for i in definition.inputs] == [
        ("invoice", "file", True, None),
        ("amount", "number", True, None),
        ("currency", "string", False, "EUR"),
        ("notify", "boolean", False, True),
    ]
    steps = {step.id: step for step in definition.steps}
    assert list(steps) == ["extract", "rate", "check", "review", "approval", "cool_down", "notify"]
    assert steps["extract"].config == AgentCall("invoice-extractor")
    assert steps["extract"].timeout_seconds == 300
    assert steps["extract"].retry.count == 2
    assert steps["extract"].retry.backoff_seconds == 5
    assert steps["rate"].config == HttpRequest("GET", (200,))
    assert steps["rate"].allow_failure
    assert steps["rate"].timeout_seconds == 10
    # Dependencies come from needs and from the expressions' references.
    assert steps["check"].needs == ("extract", "rate")
    assert steps["review"].needs == ("check",)
    assert steps["approval"].config == BlockCall("manager-approval", "1.2.0")
    assert steps["approval"].needs == ("review", "check", "extract")
    assert steps["cool_down"].params == MappingTemplate((("duration", Literal(2.0)),))
    assert steps["notify"].needs == ("approval", "cool_down", "check")
    assert steps["notify"].config == HttpRequest("POST", ())
    assert definition.result is not None
    assert definition.document["name"] == "invoice-approval"
    assert steps["extract"].position.line == 19


def test_a_minimal_workflow_and_shorthands() -> None:
    definition = parse_workflow(
        textwrap.dedent(
            """\
            name: tiny
            inputs:
              n: integer
            steps:
              - id: double
                type: transform
                value: ${{ inputs.n * 2 }}
                retries: 1
              - id: pause
                type: wait
                until: 2030-01-01T00:00:00Z
                needs: double
            """
        )
    )
    assert definition.kind == "workflow"
    assert definition.inputs[0].required
    assert definition.steps[0].retry.count == 1
    assert definition.steps[1].needs == ("double",)
    assert definition.result is None


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        # YAML itself
        ("name: x\nsteps: [\n", 3, 1, "invalid YAML"),
        ("- a\n- b\n", 1, 1, "a workflow must be a YAML mapping"),
        ("name: x\nname: y\nsteps: []\n", 2, 1, "duplicate key 'name' (first at line 1)"),
        ("name: &n x\ntitle: *n\nsteps: []\n", 2, 8, "YAML aliases (*name) are not supported"),
        # the workflow
        (
            "name: x\nstep: []\nsteps: [{id: a, type: wait, duration: 1}]\n",
            2,
            1,
            "unknown key 'step' in the workflow (did you mean 'steps'?)",
        ),
        ("name: x\nsteps: []\n", 2, 8, "steps must be a non-empty list"),
        ("name: [x]\nsteps: [{id: a, type: wait, duration: 1}]\n", 1, 7, "name must be a string"),
        ("name: a b\nsteps: [{id: a, type: wait, duration: 1}]\n", 1, 7, "must be 1 to 64 letters"),
        ("name: executions\nsteps: [{id: a, type: wait, duration: 1}]\n", 1, 7, "is reserved"),
        ("name: x\nkind: flow\nsteps: [{id: a, type: wait, duration: 1}]\n", 2, 7, "kind must"),
        ("steps: [{id: a, type: wait, duration: 1}]\n", 1, 1, "the workflow needs 'name'"),
        # inputs
        (
            "name: x\ninputs:\n  a: numbr\nsteps: [{id: a, type: wait, duration: 1}]\n",
            3,
            6,
            "unknown input type 'numbr'",
        ),
        (
            "name: x\ninputs:\n  a: {type: integer, default: 1.5}\n"
            "steps: [{id: a, type: wait, duration: 1}]\n",
            3,
            31,
            "default of 'a': expected an integer, got number",
        ),
        (
            "name: x\ninputs:\n  a: {type: string, requird: true}\n"
            "steps: [{id: a, type: wait, duration: 1}]\n",
            3,
            21,
            "unknown key 'requird' in input 'a' (did you mean 'required'?)",
        ),
        (
            "name: x\ninputs:\n  a-b: string\nsteps: [{id: a, type: wait, duration: 1}]\n",
            3,
            3,
            "invalid input name 'a-b'",
        ),
        # steps
        (
            "name: x\nsteps:\n  - id: a\n    type: wait\n    duration: 1\n    nedds: [b]\n",
            6,
            5,
            "unknown key 'nedds' in step 'a' (wait) (did you mean 'needs'?)",
        ),
        ("name: x\nsteps:\n  - id: a\n    type: sleep\n", 4, 11, "unknown step type 'sleep'"),
        ("name: x\nsteps:\n  - type: wait\n    duration: 1\n", 3, 5, "step 1 (wait) needs 'id'"),
        ("name: x\nsteps:\n  - id: a\n    type: agent\n", 3, 5, "step 'a' (agent) needs 'agent'"),
        (
            "name: x\nsteps:\n  - id: a\n    type: wait\n    duration: 1\n"
            "  - id: a\n    type: wait\n    duration: 2\n",
            6,
            9,
            "duplicate step id 'a' (first at line 3)",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: wait\n    duration: soon\n",
            5,
            15,
            "duration: expected a duration",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: wait\n    duration: 1\n    until: 2030-01-01\n",
            6,
            12,
            "a wait step takes duration or until, not both",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: wait\n    timeout: -1\n    duration: 1\n",
            5,
            14,
            "timeout: a duration must be positive",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: wait\n    duration: 1\n"
            "    allow_failure: maybe\n",
            6,
            20,
            "allow_failure must be true or false",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: wait\n    duration: 1\n    retries: 11\n",
            6,
            14,
            "retries: expected a count from 0 to 10",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: wait\n    duration: 1\n"
            "    retries: {count: 1, delay: 2}\n",
            6,
            25,
            "unknown key 'delay' in retries",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: http\n    url: ftp://x\n",
            5,
            10,
            "url must start with http:// or https://",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: http\n    url: http://x\n    method: FETCH\n",
            6,
            13,
            "unknown HTTP method 'FETCH'",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: http\n    url: http://x\n"
            "    expect_status: [200, 700]\n",
            6,
            26,
            "expect_status takes HTTP statuses",
        ),
        # references and dependencies
        (
            "name: x\nsteps:\n  - id: a\n    type: wait\n    duration: 1\n    needs: [b]\n",
            6,
            13,
            "unknown step 'b' in needs",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: transform\n"
            "    value: ${{ steps.fetch.output }}\n",
            5,
            16,
            "unknown step 'fetch'",
        ),
        (
            "name: x\ninputs: {amount: number}\nsteps:\n  - id: a\n    type: transform\n"
            "    value: 'total ${{ inputs.amont * 2 }}'\n",
            6,
            23,
            "unknown input 'amont' (did you mean 'amount'?)",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: transform\n    value: 1\n"
            "  - id: b\n    type: transform\n    value: ${{ steps.a.outptu }}\n",
            8,
            16,
            "steps.a has output, status, error, attempts; not 'outptu' (did you mean 'output'?)",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: transform\n    value: ${{ steps }}\n",
            5,
            16,
            "name the step: steps.<id>",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: transform\n    value:\n"
            "      deep: [1, '${{ 1 + }}']\n",
            6,
            25,
            "invalid expression: expected a value, found the end of the expression",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: transform\n    value: ${{ __import__('os') }}\n",
            5,
            16,
            "invalid expression: names starting with '__' are not allowed",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: transform\n    value: 1\n"
            "result: ${{ steps.b.output }}\n",
            6,
            13,
            "unknown step 'b'",
        ),
        (
            "name: x\nsteps:\n  - id: a\n    type: transform\n    value: ${{ steps.a.output }}\n",
            3,
            5,
            "dependency cycle: a -> a",
        ),
        (
            "name: loop\nkind: block\nsteps:\n  - id: again\n    type: block\n    block: loop\n",
            6,
            12,
            "block 'loop' calls itself",
        ),
    ],
)
def test_validation_errors_name_line_column_and_problem(
    text: str, line: int, column: int, message: str
) -> None:
    issue = only_issue(text)
    assert message in issue.message
    assert (issue.line, issue.column) == (line, column), issue


def test_a_cycle_is_named_through_every_step() -> None:
    issue = only_issue(
        """\
        name: x
        steps:
          - id: a
            type: transform
            value: ${{ steps.c.output }}
          - id: b
            type: wait
            duration: 1
            needs: a
          - id: c
            type: transform
            value: 1
            needs: [b]
        """
    )
    assert issue.message == "dependency cycle: a -> c -> b -> a"
    assert (issue.line, issue.column) == (3, 5)


def test_every_problem_is_reported_at_once_in_source_order() -> None:
    issues = issues_of(
        """\
        name: x
        inputs:
          a: string
        steps:
          - id: one
            type: transform
            value: ${{ inputs.b }}
            colour: red
          - id: two
            type: http
            url: "http://h/${{ steps.three.output }}"
        """
    )
    assert [str(issue) for issue in issues] == [
        "line 7, column 16: unknown input 'b'",
        "line 8, column 5: unknown key 'colour' in step 'one' (transform) (allowed: id, type, "
        "needs, timeout, retries, allow_failure, description, value)",
        "line 11, column 24: unknown step 'three'",
    ]
    assert str(WorkflowValidationError(issues)).splitlines()[0] == str(issues[0])


def test_expression_positions_in_block_scalars() -> None:
    issue = only_issue(
        """\
        name: x
        steps:
          - id: a
            type: transform
            value: |
              first line
              second ${{ inputs.nope }}
        """
    )
    assert issue.message == "unknown input 'nope'"
    assert (issue.line, issue.column) == (7, 18)


def test_oversized_documents_are_refused() -> None:
    with pytest.raises(WorkflowValidationError, match="longer than 1048576 characters"):
        parse_workflow("name: x\n" + "#" * 1_048_576)
