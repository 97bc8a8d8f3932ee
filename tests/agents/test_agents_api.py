"""Agents over HTTP: create, list (search, paging, statistics), get (include), update."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy.orm import Session

from generated.agents.client import (
    ServiceClient,
    ServiceError,
    ServiceNotFoundError,
    ServiceValidationError,
)
from generated.agents.models import AgentDataset
from handlers.agents.storage.schema import ExecutionFile
from tests.agents.support import RunningServer, file_bytes, workspace_file


def _issue_fields(error: ServiceError) -> list[str]:
    return [issue["field"] for issue in error.envelope["issues"]]


def _create(client: ServiceClient, slug: str, **extra: Any) -> Any:
    return client.agents.create({"name": f"Agent {slug}", "slug": slug, **extra}).agent


def test_create_returns_the_agent_with_default_manifest_and_empty_stats(
    admin: ServiceClient, unique: str
) -> None:
    agent = _create(admin, f"create-{unique}", description="Extracts invoices")

    assert agent.id.startswith("agt_")
    assert agent.slug == f"create-{unique}"
    assert agent.description == "Extracts invoices"
    assert agent.config is not None
    assert [item.root for item in agent.config.entrypoint] == ["python", "main.py"]
    assert agent.config.timeout_seconds == 300
    assert agent.stats.total_executions == 0
    assert agent.stats.example_count == 0
    assert agent.stats.last_execution_at is None
    assert agent.created_at == agent.updated_at


def test_an_agent_reports_integrity_version_commit_and_credits(
    admin: ServiceClient, unique: str
) -> None:
    agent = _create(admin, f"facts-{unique}")

    assert agent.source_integrity.value == "healthy"  # main.py, the entrypoint's script, exists
    assert agent.latest_version is None and agent.stats.avg_credits is None
    assert agent.archived_at is None
    assert isinstance(agent.latest_commit, str) and len(agent.latest_commit) == 64
    assert admin.agents.get(agent.id).agent.latest_commit == agent.latest_commit  # stable
    admin.agents.put_file(agent.id, {"content": "note"}, path="notes.md")
    changed = admin.agents.get(agent.id).agent.latest_commit
    assert changed != agent.latest_commit
    admin.agents.put_file(agent.id, {"content": "note"}, path="notes.md")  # same content
    assert admin.agents.get(agent.id).agent.latest_commit == changed


def test_the_latest_commit_is_the_snapshot_a_run_records(
    server: RunningServer, admin: ServiceClient, unique: str
) -> None:
    agent = _create(admin, f"commit-{unique}")
    run = admin.agents.run(agent.id, {"input": {}})

    def snapshot(session: Session) -> str:
        row = session.get(ExecutionFile, (run.execution_id, "workspace", "manifest.json"))
        assert row is not None
        return row.blob_sha256

    assert server.server.database.read_sync(snapshot) == agent.latest_commit


@pytest.mark.parametrize(
    ("entrypoint", "integrity"),
    [
        (["python", "missing.py"], "source_missing"),
        (["python3.11", "-u", "./main.py"], "healthy"),
        (["python", "-c", "print(1)"], "healthy"),  # names no workspace file
        (["bash", "-c", "echo hi"], "healthy"),
        (["./run.sh"], "source_missing"),
        (["/usr/bin/env", "true"], "healthy"),  # an absolute program is not the workspace's
    ],
)
def test_source_integrity_follows_the_entrypoint(
    admin: ServiceClient, unique: str, entrypoint: list[str], integrity: str
) -> None:
    agent = _create(admin, f"integrity-{unique}", config={"entrypoint": entrypoint})
    assert agent.source_integrity.value == integrity
    listed = admin.agents.list(search=agent.slug).data
    assert [a.source_integrity.value for a in listed] == [integrity]


def test_a_config_of_only_a_trigger_is_a_whole_manifest(admin: ServiceClient, unique: str) -> None:
    agent = _create(admin, f"trigger-{unique}", config={"triggers": {"api": {"enabled": False}}})
    assert agent.config.model_dump(mode="json", by_alias=True) == {
        "entrypoint": ["python", "main.py"],
        "timeoutSeconds": 300,
        "inputSchema": None,
        "outputSchema": None,
        "network": "none",
        "triggers": {"api": {"enabled": False}},
        "retries": None,
        "concurrency": None,
    }
    assert _manifest(admin, agent.id)["triggers"] == {"api": {"enabled": False}}
    # agent.json written through the files API sets the trigger too
    manifest = {"entrypoint": ["python", "main.py"], "triggers": {"api": {"enabled": True}}}
    admin.agents.put_file(agent.id, {"content": json.dumps(manifest)}, path="agent.json")
    assert admin.agents.get(agent.id).agent.config.triggers.api.enabled is True


def test_create_initializes_the_workspace(admin: ServiceClient, unique: str) -> None:
    agent = _create(admin, f"workspace-{unique}")

    files = admin.agents.get(agent.id, include=["files"]).files
    assert isinstance(files, list)
    assert [entry.path for entry in files] == ["agent.json", "main.py"]
    assert all(entry.size_bytes > 0 for entry in files)


def test_get_by_id_and_by_slug(admin: ServiceClient, unique: str) -> None:
    agent = _create(admin, f"lookup-{unique}")

    assert admin.agents.get(agent.id).agent == agent
    assert admin.agents.get(agent.slug).agent == agent


def test_get_without_include_leaves_sections_null_and_dataset_is_empty(
    admin: ServiceClient, unique: str
) -> None:
    agent = _create(admin, f"sections-{unique}")

    plain = admin.agents.get(agent.id)
    assert plain.files is None and plain.dataset is None
    dataset = admin.agents.get(agent.id, include=["dataset"]).dataset
    assert isinstance(dataset, AgentDataset)
    assert dataset.example_count == 0 and dataset.examples == []


def test_unknown_agent_is_404(admin: ServiceClient) -> None:
    with pytest.raises(ServiceNotFoundError) as caught:
        admin.agents.get("no-such-agent")
    assert "no-such-agent" in str(caught.value)


def test_reserved_slug_is_400(admin: ServiceClient) -> None:
    with pytest.raises(ServiceValidationError) as caught:
        _create(admin, "executions")
    assert _issue_fields(caught.value) == ["body.slug"]


def test_duplicate_slug_is_409_and_keeps_the_first(admin: ServiceClient, unique: str) -> None:
    first = _create(admin, f"dup-{unique}")

    with pytest.raises(ServiceError) as caught:
        admin.agents.create({"name": "Other", "slug": f"dup-{unique}"})
    assert caught.value.status == 409
    assert admin.agents.get(f"dup-{unique}").agent.name == first.name


@pytest.mark.parametrize("slug", ["Upper", "-leading", "has space", "x" * 65, ""])
def test_invalid_slug_is_400(admin: ServiceClient, slug: str) -> None:
    with pytest.raises(ServiceValidationError) as caught:
        admin.agents.create({"name": "Bad", "slug": slug})
    assert _issue_fields(caught.value) == ["body.slug"]


def test_every_invalid_field_is_reported(admin: ServiceClient) -> None:
    with pytest.raises(ServiceValidationError) as caught:
        admin.agents.create({"name": "", "slug": "UPPER", "extra": 1})
    assert sorted(_issue_fields(caught.value)) == ["body.extra", "body.name", "body.slug"]


def test_bad_json_schema_in_config_is_400_naming_it(admin: ServiceClient, unique: str) -> None:
    config = {"entrypoint": ["python", "main.py"], "outputSchema": {"type": "no-such-type"}}
    with pytest.raises(ServiceValidationError) as caught:
        _create(admin, f"schema-{unique}", config=config)
    assert _issue_fields(caught.value) == ["body.config.outputSchema"]
    with pytest.raises(ServiceNotFoundError):
        admin.agents.get(f"schema-{unique}")


def test_create_with_config_stores_it_in_agent_json(
    server: RunningServer, admin: ServiceClient, admin_key: str, unique: str
) -> None:
    schema = {"type": "object", "required": ["customer"]}
    config = {"entrypoint": ["python3", "run.py"], "timeoutSeconds": 60, "inputSchema": schema}
    agent = _create(admin, f"config-{unique}", config=config)

    assert agent.config.input_schema == schema
    assert agent.config.output_schema is None
    manifest = _manifest(admin, agent.id)
    assert manifest == {
        **config,
        "outputSchema": None,
        "network": "none",
        "triggers": {"api": {"enabled": True}},
        "retries": None,
        "concurrency": None,
    }


def _manifest(admin: ServiceClient, agent: str) -> Any:
    """The agent's ``agent.json``, parsed."""
    return json.loads(file_bytes(workspace_file(admin, agent, "agent.json")))


def test_update_changes_given_fields_only(admin: ServiceClient, unique: str) -> None:
    agent = _create(admin, f"update-{unique}", description="before")

    renamed = admin.agents.update(agent.id, {"name": "Renamed"}).agent
    assert renamed.name == "Renamed" and renamed.description == "before"
    assert renamed.updated_at > agent.updated_at
    cleared = admin.agents.update(agent.slug, {"description": None}).agent
    assert cleared.name == "Renamed" and cleared.description is None
    kept = admin.agents.update(agent.slug, {"name": None, "config": None}).agent
    assert kept.name == "Renamed" and kept.config == agent.config


def test_update_config_rewrites_agent_json(
    server: RunningServer, admin: ServiceClient, admin_key: str, unique: str
) -> None:
    agent = _create(admin, f"reconfig-{unique}")
    config = {"entrypoint": ["node", "index.js"], "timeoutSeconds": 900}

    updated = admin.agents.update(agent.id, {"config": config}).agent
    assert updated.config is not None
    assert [item.root for item in updated.config.entrypoint] == ["node", "index.js"]
    manifest = _manifest(admin, agent.id)
    assert manifest["entrypoint"] == ["node", "index.js"] and manifest["timeoutSeconds"] == 900
    assert admin.agents.get(agent.id).agent.config == updated.config


def test_update_unknown_agent_is_404(admin: ServiceClient) -> None:
    with pytest.raises(ServiceNotFoundError):
        admin.agents.update("missing-agent", {"name": "x"})


def test_list_is_newest_first_with_search_and_paging(admin: ServiceClient, unique: str) -> None:
    slugs = [f"page-{unique}-{n}" for n in range(5)]
    for slug in slugs:
        _create(admin, slug)
    _create(admin, f"other-{unique}", description=f"mentions PAGE-{unique} in its text")

    everything = admin.agents.list(search=f"page-{unique}", limit=200)
    assert everything.total == 6
    first = admin.agents.list(search=f"page-{unique}-", limit=2)
    second = admin.agents.list(search=f"page-{unique}-", limit=2, offset=2)
    third = admin.agents.list(search=f"page-{unique}-", limit=2, offset=4)
    assert (first.total, first.limit, first.offset) == (5, 2, 0)
    shown = [a.slug for page in (first, second, third) for a in page.data]
    assert shown == list(reversed(slugs))
    assert all(a.stats.total_executions == 0 for a in first.data)


def test_search_matches_name_and_description_case_insensitively(
    admin: ServiceClient, unique: str
) -> None:
    by_name = admin.agents.create({"name": f"Needle{unique.upper()}", "slug": f"n1-{unique}"})
    by_text = _create(admin, f"n2-{unique}", description=f"a needle{unique} inside")

    found = admin.agents.list(search=f"NEEDLE{unique}")
    assert {a.id for a in found.data} == {by_name.agent.id, by_text.id}
    assert admin.agents.list(search=f"%{unique}").total == 0  # LIKE wildcards are literal


def test_list_bounds_are_validated(admin: ServiceClient) -> None:
    with pytest.raises(ServiceValidationError) as caught:
        admin.agents.list(limit=0, offset=-1)
    assert sorted(_issue_fields(caught.value)) == ["query.limit", "query.offset"]


def test_concurrent_creates_are_consistent(
    server: RunningServer, admin_key: str, unique: str
) -> None:
    def create(slug: str) -> int:
        with server.client(admin_key) as client:
            try:
                client.agents.create({"name": slug, "slug": slug})
            except ServiceError as error:
                return error.status
            return 201

    slugs = [f"race-{unique}"] * 6 + [f"race-{unique}-{n}" for n in range(10)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(create, slugs))

    assert sorted(statuses[:6]) == [201, 409, 409, 409, 409, 409]
    assert statuses[6:] == [201] * 10
    with server.client(admin_key) as client:
        assert client.agents.list(search=f"race-{unique}").total == 11
