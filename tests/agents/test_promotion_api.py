"""Promotion of reviewed executions to dataset examples through the API
(``PUT``/``DELETE /api/v1/agents/executions/{executionId}/promotion``), on SQLite and
PostgreSQL, with real runs of a real agent."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from generated.agents import models
from generated.agents.client import (
    ServiceClient,
    ServiceConflictError,
    ServiceNotFoundError,
    ServiceValidationError,
)
from handlers.agents.domain.promotion import EXAMPLE_NAME, MAX_EXAMPLE_NAME
from tests.agents.run_support import issues, new_agent, wait_for
from tests.agents.support import RunningServer

ROOT = Path(__file__).resolve().parents[2]


def _finished(admin: ServiceClient, slug: str, n: int, *, feedback: bool = True) -> str:
    """A completed execution of ``slug`` (reviewed unless ``feedback`` is false); its id."""
    answer = admin.agents.run(slug, {"input": {"n": n}}, wait_for_completion=30)
    assert answer.status.value == "completed"
    if feedback:
        admin.agents.executions.update_feedback(
            answer.execution_id, {"body": f"run {n} is right", "rating": "pass"}
        )
    return answer.execution_id


def _dataset(admin: ServiceClient, slug: str) -> list[tuple[str, object]]:
    dataset = admin.agents.get(slug, include=["dataset"]).dataset
    assert isinstance(dataset, models.AgentDataset)
    assert dataset.example_count == len(dataset.examples)
    return [(example.name, example.source_execution_id) for example in dataset.examples]


def _promoted_name(admin: ServiceClient, execution_id: str) -> object:
    feedback = admin.agents.executions.get_feedback(execution_id).feedback
    assert feedback is not None
    return feedback.promoted_example_name


def _conflict_message(caught: pytest.ExceptionInfo[ServiceConflictError]) -> str:
    assert caught.value.status == 409
    messages = [message for _, message in issues(caught.value)]
    assert len(messages) == 1, messages
    return messages[0]


def test_a_reviewed_execution_is_promoted(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    agent_id = admin.agents.get(slug).agent.id
    execution_id = _finished(admin, slug, 1)
    other_id = _finished(admin, slug, 2)

    promoted = admin.agents.executions.promote(execution_id, {"name": "acme 2026-04"})
    assert isinstance(promoted, models.AgentExecutionPromotion)
    assert promoted.execution_id == execution_id
    assert promoted.agent_id == agent_id
    assert promoted.example_name == "acme 2026-04"

    dataset = admin.agents.get(slug, include=["dataset"]).dataset
    assert isinstance(dataset, models.AgentDataset)
    assert dataset.example_count == 1
    (example,) = dataset.examples
    assert (example.name, example.source_execution_id) == ("acme 2026-04", execution_id)
    assert example.created_at == promoted.created_at
    assert example.has_expected is False
    assert admin.agents.get(slug).agent.stats.example_count == 1
    assert _promoted_name(admin, execution_id) == "acme 2026-04"
    assert _promoted_name(admin, other_id) is None

    listed = admin.agents.executions.list(slug, promoted_to_example=True)
    assert [execution.id for execution in listed.executions] == [execution_id]
    assert listed.total == 1
    by_name = admin.agents.executions.list(slug, promoted_example_name="acme 2026-04")
    assert [execution.id for execution in by_name.executions] == [execution_id]
    others = admin.agents.executions.list(slug, promoted_to_example=False)
    assert [execution.id for execution in others.executions] == [other_id]


def test_promoting_again_under_the_same_name_answers_the_same(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    execution_id = _finished(admin, slug, 1)
    first = admin.agents.executions.promote(execution_id, {"name": "golden"})
    second = admin.agents.executions.promote(execution_id, {"name": "golden"})
    assert second == first
    assert second.created_at == first.created_at
    assert _dataset(admin, slug) == [("golden", execution_id)]


def test_the_wire_shape_of_promote_and_demote(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    execution_id = _finished(admin, slug, 1)
    path = f"/api/v1/agents/executions/{execution_id}/promotion"

    promoted = admin._http.put(path, json={"name": "wire"})
    assert promoted.status_code == 200
    body = promoted.json()
    assert sorted(body) == ["agentId", "createdAt", "exampleName", "executionId"]
    assert (body["executionId"], body["exampleName"]) == (execution_id, "wire")
    assert body["agentId"] == admin.agents.get(slug).agent.id

    demoted = admin._http.delete(path)
    assert demoted.status_code == 200
    assert demoted.json() == {"executionId": execution_id, "removedExamples": ["wire"]}
    assert admin._http.delete(path).json() == {"executionId": execution_id, "removedExamples": []}


def test_promotion_conflicts(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    execution_id = _finished(admin, slug, 1)
    sibling_id = _finished(admin, slug, 2)
    unreviewed_id = _finished(admin, slug, 3, feedback=False)
    admin.agents.executions.promote(execution_id, {"name": "taken"})

    with pytest.raises(ServiceConflictError) as renamed:
        admin.agents.executions.promote(execution_id, {"name": "other"})
    assert _conflict_message(renamed) == (
        f"Execution '{execution_id}' is already the example 'taken': demote it first"
    )
    with pytest.raises(ServiceConflictError) as name_taken:
        admin.agents.executions.promote(sibling_id, {"name": "taken"})
    assert _conflict_message(name_taken) == f"Agent '{slug}' already has an example named 'taken'"
    with pytest.raises(ServiceConflictError) as unreviewed:
        admin.agents.executions.promote(unreviewed_id, {"name": "unreviewed"})
    assert _conflict_message(unreviewed).startswith(f"Execution '{unreviewed_id}' has no feedback")

    assert _promoted_name(admin, sibling_id) is None
    assert _dataset(admin, slug) == [("taken", execution_id)]
    assert admin.agents.get(slug).agent.stats.example_count == 1


def test_concurrent_promotions_under_one_name_give_one_example(
    server: RunningServer, admin_key: str, admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    execution_ids = [_finished(admin, slug, n) for n in range(4)]
    clients = [server.client(admin_key) for _ in execution_ids]

    def promote(index: int) -> int:
        path = f"/api/v1/agents/executions/{execution_ids[index]}/promotion"
        return clients[index]._http.put(path, json={"name": "contested"}).status_code

    try:
        with ThreadPoolExecutor(len(clients)) as pool:
            statuses = list(pool.map(promote, range(len(clients))))
    finally:
        for client in clients:
            client.close()
    assert sorted(statuses) == [200, 409, 409, 409]
    winner = execution_ids[statuses.index(200)]
    assert _dataset(admin, slug) == [("contested", winner)]
    assert [_promoted_name(admin, e) for e in execution_ids].count("contested") == 1


def test_an_execution_that_has_not_ended_cannot_be_promoted(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    started = admin.agents.run(slug, {"input": {"sleep": 5}})
    try:
        with pytest.raises(ServiceConflictError) as no_feedback:
            admin.agents.executions.promote(started.execution_id, {"name": "too early"})
        assert "has no feedback" in _conflict_message(no_feedback)
        admin.agents.executions.update_feedback(started.execution_id, {"body": "not done yet"})
        with pytest.raises(ServiceConflictError) as early:
            admin.agents.executions.promote(started.execution_id, {"name": "too early"})
        message = _conflict_message(early)
        status = admin.agents.executions.get(started.execution_id).execution.status.value
        assert status in ("created", "pending", "running"), status
        assert message.startswith(f"Execution '{started.execution_id}' is "), message
        assert message.endswith(": only an execution that has ended can be promoted"), message
        assert _dataset(admin, slug) == []
        assert _promoted_name(admin, started.execution_id) is None
    finally:
        admin.agents.executions.cancel(started.execution_id)
        wait_for(admin, started.execution_id)


@pytest.mark.parametrize(
    "name", ["  x", "x  ", "tab\there", "\x01", "a\x00b", "x" * 201, ""], ids=repr
)
def test_names_that_cannot_name_an_example_are_400(
    admin: ServiceClient, unique: str, name: str
) -> None:
    slug = new_agent(admin, unique)
    execution_id = _finished(admin, slug, 1)
    with pytest.raises(ServiceValidationError) as caught:
        admin.agents.executions.promote(execution_id, {"name": name})
    assert caught.value.status == 400
    assert [field for field, _ in issues(caught.value)] == ["body.name"]
    assert _dataset(admin, slug) == []
    assert _promoted_name(admin, execution_id) is None


def test_names_at_the_limits_are_accepted(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    longest, unicode = "x" * 200, "café ✓ 2026/04 (A-1)"
    first, second = _finished(admin, slug, 1), _finished(admin, slug, 2)
    assert admin.agents.executions.promote(first, {"name": longest}).example_name == longest
    assert admin.agents.executions.promote(second, {"name": unicode}).example_name == unicode
    assert sorted(name for name, _ in _dataset(admin, slug)) == sorted([longest, unicode])


def test_a_body_without_a_name_is_400(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    execution_id = _finished(admin, slug, 1)
    with pytest.raises(ServiceValidationError) as missing:
        admin.agents.executions.promote(execution_id, {})
    assert [field for field, _ in issues(missing.value)] == ["body.name"]
    with pytest.raises(ServiceValidationError):
        admin.agents.executions.promote(execution_id, {"name": 5})


def test_unknown_or_invisible_executions_are_404(
    server: RunningServer, admin: ServiceClient, unique: str
) -> None:
    with pytest.raises(ServiceNotFoundError):
        admin.agents.executions.promote(f"aex_missing{unique}", {"name": "x"})
    with pytest.raises(ServiceNotFoundError):
        admin.agents.executions.demote(f"aex_missing{unique}")

    slug = new_agent(admin, unique)
    execution_id = _finished(admin, slug, 1)
    with server.client(server.key("elsewhere", agents=(f"none-{unique}",))) as scoped:
        with pytest.raises(ServiceNotFoundError):
            scoped.agents.executions.promote(execution_id, {"name": "hidden"})
        with pytest.raises(ServiceNotFoundError):
            scoped.agents.executions.demote(execution_id)
    assert _dataset(admin, slug) == []


def test_demote_withdraws_the_example(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    execution_id = _finished(admin, slug, 1)
    admin.agents.executions.promote(execution_id, {"name": "to-withdraw"})

    demoted = admin.agents.executions.demote(execution_id)
    assert isinstance(demoted, models.AgentExecutionDemotion)
    assert demoted.execution_id == execution_id
    assert [name.root for name in demoted.removed_examples] == ["to-withdraw"]
    assert _dataset(admin, slug) == []
    assert admin.agents.get(slug).agent.stats.example_count == 0
    assert _promoted_name(admin, execution_id) is None
    assert admin.agents.executions.list(slug, promoted_to_example=True).executions == []

    again = admin.agents.executions.demote(execution_id)
    assert again.execution_id == execution_id and again.removed_examples == []
    # the name is free again, and the execution may be promoted under another one
    renamed = admin.agents.executions.promote(execution_id, {"name": "second"})
    assert renamed.example_name == "second"
    assert _dataset(admin, slug) == [("second", execution_id)]
    # demoting an execution that never was promoted changes nothing
    plain_id = _finished(admin, slug, 2)
    assert admin.agents.executions.demote(plain_id).removed_examples == []
    assert _dataset(admin, slug) == [("second", execution_id)]
    # a withdrawn name may be taken by another execution
    taker = admin.agents.executions.promote(plain_id, {"name": "to-withdraw"})
    assert taker.execution_id == plain_id
    assert sorted(_dataset(admin, slug)) == [("second", execution_id), ("to-withdraw", plain_id)]


def test_clearing_the_feedback_withdraws_the_promotion(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    execution_id = _finished(admin, slug, 1)
    admin.agents.executions.promote(execution_id, {"name": "cleared"})
    admin.agents.executions.clear_feedback(execution_id)
    assert _dataset(admin, slug) == []


def test_the_spec_states_the_example_name_rule_the_server_applies() -> None:
    spec = yaml.safe_load((ROOT / "specs" / "agents.openapi.yaml").read_text())
    name = spec["components"]["schemas"]["PromoteAgentExecutionBody"]["properties"]["name"]
    assert name["pattern"] == EXAMPLE_NAME.pattern
    assert name["maxLength"] == MAX_EXAMPLE_NAME
