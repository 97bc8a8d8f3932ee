"""Expression bombs through the real server, on SQLite and PostgreSQL: a definition holding one
is refused with a 400 naming its line and column (create and release) without stalling the
server, and a bomb on a run's inputs fails the execution with a clear error."""

from __future__ import annotations

import threading
import time

import pytest

from generated.agents.client import ServiceClient, ServiceNotFoundError, ServiceValidationError
from tests.agents.support import RunningServer
from tests.agents.workflows.api_support import (
    create,
    issue_messages,
    run_status,
    steps_of,
    wait_for_status,
)
from tests.agents.workflows.test_expression_limits import JSON_BOMB, NESTING_BOMB, TIME_BOMB

QUICK_SECONDS = 5.0
"""A refusal comes well within this (before the limits, the JSON bomb ran for minutes)."""


def _bomb(slug: str, expression: str) -> str:
    """A one-step workflow; the expression starts at line 5, column 16."""
    return (
        f"name: {slug}\nsteps:\n  - id: boom\n    type: transform\n"
        f"    value: ${{{{ {expression} }}}}\n"
    )


def _constant(slug: str) -> str:
    return f"name: {slug}\nsteps:\n  - id: boom\n    type: transform\n    value: 1\n"


BOMBS = [
    (JSON_BOMB, "line 5, column 33: invalid expression: value too large (20000200001 bytes"),
    (NESTING_BOMB, "line 5, column 16: invalid expression: from_json(): JSON nested too deeply"),
]


@pytest.mark.parametrize(("expression", "issue"), BOMBS)
def test_creating_a_workflow_with_a_bomb_answers_400_quickly(
    admin: ServiceClient, unique: str, expression: str, issue: str
) -> None:
    slug = f"bomb-{unique}"
    started = time.monotonic()
    with pytest.raises(ServiceValidationError) as caught:
        create(admin, _bomb(slug, expression))
    assert time.monotonic() - started < QUICK_SECONDS
    messages = issue_messages(caught.value)
    assert len(messages) == 1 and messages[0].startswith(issue), messages
    assert {item["field"] for item in caught.value.envelope["issues"]} == {"body.yamlContent"}
    with pytest.raises(ServiceNotFoundError):
        admin.workflows.get(slug)


@pytest.mark.parametrize(("expression", "issue"), BOMBS)
def test_releasing_a_version_with_a_bomb_answers_400_quickly(
    admin: ServiceClient, unique: str, expression: str, issue: str
) -> None:
    slug = f"bomb-rel-{unique}"
    create(admin, _constant(slug))
    started = time.monotonic()
    with pytest.raises(ServiceValidationError) as caught:
        admin.workflows.release(slug, {"yamlContent": _bomb(slug, expression)})
    assert time.monotonic() - started < QUICK_SECONDS
    messages = issue_messages(caught.value)
    assert len(messages) == 1 and messages[0].startswith(issue), messages
    assert admin.workflows.versions(slug).total == 1


def test_the_server_keeps_serving_while_a_definition_is_checked(
    server: RunningServer, admin_key: str, admin: ServiceClient, unique: str
) -> None:
    """The slow constant expression is evaluated in a worker thread, and for at most 2 s."""
    refused: list[ServiceValidationError] = []

    def create_slow() -> None:
        with server.client(admin_key) as other, pytest.raises(ServiceValidationError) as caught:
            create(other, _bomb(f"slow-{unique}", TIME_BOMB))
        refused.append(caught.value)

    creating = threading.Thread(target=create_slow)
    started = time.monotonic()
    creating.start()
    time.sleep(0.5)  # the definition is being checked by now
    answered = time.monotonic()
    admin.workflows.list(limit=1)
    served_in = time.monotonic() - answered
    creating.join(timeout=30)
    assert not creating.is_alive()
    assert time.monotonic() - started < QUICK_SECONDS
    [error] = refused
    [message] = issue_messages(error)
    assert message.startswith("line 5, column ") and message.endswith(
        ": invalid expression: expression took longer than 2 s"
    ), message
    assert served_in < 1.0, f"the list waited {served_in:.2f} s for the definition's check"


@pytest.mark.parametrize(
    ("expression", "n", "message"),
    [
        ("json([[0] * inputs.n] * inputs.n)", 100_000, "value too large (20000200001 bytes"),
        (
            "from_json('[' * inputs.n + ']' * inputs.n)",
            100_000,
            "from_json(): JSON nested too deeply (more than 100 levels)",
        ),
        ("upper('ß' * inputs.n)", 1_000_000, "string result too long (2000000 characters"),
    ],
)
def test_a_bomb_on_the_inputs_fails_the_execution_with_a_clear_error(
    admin: ServiceClient, unique: str, expression: str, n: int, message: str
) -> None:
    slug = f"bomb-run-{unique}"
    yaml = (
        f"name: {slug}\ninputs:\n  n: integer\nsteps:\n  - id: boom\n    type: transform\n"
        f"    value: ${{{{ {expression} }}}}\n"
        "  - id: after\n    type: transform\n    needs: boom\n    value: 1\n"
    )
    create(admin, yaml)
    started = time.monotonic()
    answer = admin.workflows.run(slug, {"input": {"n": n}}, wait_for_completion=30)
    assert time.monotonic() - started < QUICK_SECONDS + 5
    assert run_status(answer) == "failed"
    expected = f"cannot evaluate the step's parameters: ${{{{ {expression} }}}}: {message}"
    assert isinstance(answer.error, str)
    assert answer.error.startswith(f"step 'boom' failed: {expected}"), answer.error
    steps = steps_of(wait_for_status(admin, answer.execution_id))
    assert steps["boom"].status.value == "failed"
    assert steps["boom"].error.startswith(expected)
    assert steps["after"].status.value == "skipped"
