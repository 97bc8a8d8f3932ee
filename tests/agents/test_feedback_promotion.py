"""Promotion of reviewed executions to dataset examples (``agents-admin promote``/``demote``)
and what the API shows of it: the feedback's ``promotedExampleName`` and the agent's dataset."""

from __future__ import annotations

from functools import partial

import pytest

from generated.agents import models
from generated.agents.client import ServiceClient
from handlers.agents.admin import main as admin_main
from handlers.agents.domain.promotion import PromotionError, demote, promote
from tests.agents.feedback_support import StoredExecution, insert_execution, new_agent
from tests.agents.support import RunningServer


@pytest.fixture
def reviewed(server: RunningServer, admin: ServiceClient, unique: str) -> StoredExecution:
    """A completed execution with feedback and expected results."""
    execution = insert_execution(server, new_agent(admin, unique, "promo"))
    admin.agents.executions.update_feedback(
        execution.id, {"body": "good example", "rating": "pass", "expected": {"total": 1264.5}}
    )
    return execution


def _promote(server: RunningServer, execution_id: str, name: str) -> None:
    server.server.database.write_sync(partial(promote, execution_id=execution_id, name=name))


def _demote(server: RunningServer, execution_id: str) -> list[str]:
    return server.server.database.write_sync(partial(demote, execution_id=execution_id))


def _promoted_name(admin: ServiceClient, execution_id: str) -> str | None:
    feedback = admin.agents.executions.get_feedback(execution_id).feedback
    assert feedback is not None
    name = feedback.promoted_example_name
    assert name is None or isinstance(name, str)
    return name


def _dataset(admin: ServiceClient, agent: str) -> list[tuple[str, object, object]]:
    dataset = admin.agents.get(agent, include=["dataset"]).dataset
    assert isinstance(dataset, models.AgentDataset)
    assert dataset.example_count == len(dataset.examples)
    return [
        (example.name, example.source_execution_id, example.has_expected)
        for example in dataset.examples
    ]


def test_promote_shows_in_feedback_and_dataset(
    server: RunningServer, admin: ServiceClient, reviewed: StoredExecution
) -> None:
    before = admin.agents.executions.get_feedback(reviewed.id).feedback
    _promote(server, reviewed.id, "acme 2026-04")
    after = admin.agents.executions.get_feedback(reviewed.id).feedback
    assert after is not None and before is not None
    assert after.promoted_example_name == "acme 2026-04"
    assert after.updated_at > before.updated_at
    assert _dataset(admin, reviewed.agent_slug) == [("acme 2026-04", reviewed.id, True)]
    stats = admin.agents.get(reviewed.agent_slug).agent.stats
    assert stats is not None and stats.example_count == 1

    _promote(server, reviewed.id, "acme 2026-04")  # again, same name: nothing changes
    assert _dataset(admin, reviewed.agent_slug) == [("acme 2026-04", reviewed.id, True)]


def test_demote_withdraws_the_example(
    server: RunningServer, admin: ServiceClient, reviewed: StoredExecution
) -> None:
    _promote(server, reviewed.id, "to-withdraw")
    assert _demote(server, reviewed.id) == ["to-withdraw"]
    assert _promoted_name(admin, reviewed.id) is None
    assert _dataset(admin, reviewed.agent_slug) == []
    assert _demote(server, reviewed.id) == []  # not promoted: a no-op
    _promote(server, reviewed.id, "another-name")  # may be promoted again
    assert _promoted_name(admin, reviewed.id) == "another-name"


def test_clearing_the_feedback_withdraws_the_promotion(
    server: RunningServer, admin: ServiceClient, reviewed: StoredExecution
) -> None:
    admin.agents.executions.upload_expected(reviewed.id, b"{}", name="totals.json")
    _promote(server, reviewed.id, "cleared")
    admin.agents.executions.clear_feedback(reviewed.id)
    assert admin.agents.executions.get_feedback(reviewed.id).feedback is None
    assert _dataset(admin, reviewed.agent_slug) == []


def test_has_expected_follows_the_execution(
    server: RunningServer, admin: ServiceClient, reviewed: StoredExecution
) -> None:
    admin.agents.executions.update_feedback(reviewed.id, {"expected": None})
    _promote(server, reviewed.id, "no-expected-yet")
    assert _dataset(admin, reviewed.agent_slug) == [("no-expected-yet", reviewed.id, False)]
    admin.agents.executions.copy_output_to_expected(reviewed.id, {"outputFileName": "raw.bin"})
    assert _dataset(admin, reviewed.agent_slug) == [("no-expected-yet", reviewed.id, True)]


def test_promotion_refusals(
    server: RunningServer, admin: ServiceClient, reviewed: StoredExecution
) -> None:
    unreviewed = insert_execution(server, reviewed.agent_slug)
    with pytest.raises(PromotionError, match="no feedback"):
        _promote(server, unreviewed.id, "unreviewed")
    running = insert_execution(server, reviewed.agent_slug, status="running", outputs={})
    admin.agents.executions.update_feedback(running.id, {"body": "not done"})
    with pytest.raises(PromotionError, match="is running"):
        _promote(server, running.id, "running")
    with pytest.raises(PromotionError, match="No execution"):
        _promote(server, "aex_missing", "missing")
    for bad in ["", " padded", "x" * 201, "tab\there"]:
        with pytest.raises(PromotionError):
            _promote(server, reviewed.id, bad)

    _promote(server, reviewed.id, "taken")
    with pytest.raises(PromotionError, match="already the example 'taken'"):
        _promote(server, reviewed.id, "other")
    sibling = insert_execution(server, reviewed.agent_slug)
    admin.agents.executions.update_feedback(sibling.id, {"body": "also good"})
    with pytest.raises(PromotionError, match="already has an example named 'taken'"):
        _promote(server, sibling.id, "taken")
    assert _promoted_name(admin, sibling.id) is None
    assert _dataset(admin, reviewed.agent_slug) == [("taken", reviewed.id, True)]


def test_example_names_are_per_agent(
    server: RunningServer, admin: ServiceClient, unique: str, reviewed: StoredExecution
) -> None:
    elsewhere = insert_execution(server, new_agent(admin, unique, "promo-b"))
    admin.agents.executions.update_feedback(elsewhere.id, {"body": "b"})
    _promote(server, reviewed.id, "shared-name")
    _promote(server, elsewhere.id, "shared-name")
    assert _dataset(admin, elsewhere.agent_slug) == [("shared-name", elsewhere.id, False)]


def test_admin_cli_promote_and_demote(
    server: RunningServer,
    admin: ServiceClient,
    reviewed: StoredExecution,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AGENTS_DATABASE_URL", server.storage.database_url)
    monkeypatch.setenv("AGENTS_DATA_DIR", str(server.storage.data_dir))

    assert admin_main(["promote", reviewed.id, "--name", "from-cli"]) == 0
    assert f"promoted {reviewed.id} to example 'from-cli'" in capsys.readouterr().out
    assert _promoted_name(admin, reviewed.id) == "from-cli"

    assert admin_main(["promote", reviewed.id, "--name", "second"]) == 1
    assert "demote it first" in capsys.readouterr().err

    assert admin_main(["demote", reviewed.id]) == 0
    assert "removed example 'from-cli'" in capsys.readouterr().out
    assert _dataset(admin, reviewed.agent_slug) == []
    assert admin_main(["demote", "aex_missing"]) == 1
    assert "No execution 'aex_missing'" in capsys.readouterr().err
