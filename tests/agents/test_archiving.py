"""Archiving and restoring agents and workflows through the real server and the generated
client, on SQLite and PostgreSQL: what leaves the lists, what is refused (runs and reruns: 409)
and what stays (reads, executions, feedback, slugs, block steps)."""

from __future__ import annotations

import secrets

import pytest

from generated.agents import models
from generated.agents.client import (
    ServiceClient,
    ServiceConflictError,
    ServiceForbiddenError,
    ServiceNotFoundError,
)
from tests.agents.run_support import issues, new_agent, wait_for
from tests.agents.support import RunningServer
from tests.agents.workflows.api_support import create, run_status, scoped_key, summary_of


def _listed_agents(
    client: ServiceClient, slug: str, include_archived: bool | None = None
) -> list[str]:
    """The slugs of the agents listed for a search of ``slug``."""
    page = client.agents.list(search=slug, include_archived=include_archived)
    return [agent.slug for agent in page.data]


def _listed_workflows(
    client: ServiceClient, slug: str, include_archived: bool | None = None
) -> list[str]:
    page = client.workflows.list(name=slug, include_archived=include_archived)
    return [workflow.slug for workflow in page.data]


def _archived_message(kind: str, slug: str) -> str:
    return f"{kind} '{slug}' is archived: restore it to run it"


# -- agents -------------------------------------------------------------------------------------


def test_an_archived_agent_leaves_the_list_and_stays_readable(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    created = admin.agents.get(slug).agent
    assert created.archived_at is None
    assert _listed_agents(admin, slug) == [slug]

    archived = admin.agents.archive(slug).agent
    assert archived.id == created.id and archived.slug == slug
    assert archived.archived_at is not None
    assert archived.updated_at == archived.archived_at

    assert _listed_agents(admin, slug) == []
    assert _listed_agents(admin, slug, include_archived=False) == []
    assert _listed_agents(admin, slug, include_archived=True) == [slug]
    assert admin.agents.list(search=slug).total == 0
    assert admin.agents.list(search=slug, include_archived=True).total == 1
    got = admin.agents.get(slug).agent
    assert got.archived_at == archived.archived_at
    assert admin.agents.get(created.id).agent.slug == slug

    again = admin.agents.archive(created.id).agent  # by id this time: nothing changes
    assert again.archived_at == archived.archived_at
    assert again.updated_at == archived.updated_at


def test_the_wire_shape_of_archive_and_restore(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    archived = admin._http.post(f"/api/v1/agents/{slug}/archive")
    assert archived.status_code == 200
    body = archived.json()
    assert list(body) == ["agent"]
    assert isinstance(body["agent"]["archivedAt"], str)
    restored = admin._http.post(f"/api/v1/agents/{slug}/restore")
    assert restored.status_code == 200
    assert restored.json()["agent"]["archivedAt"] is None
    assert "archivedAt" in admin._http.get(f"/api/v1/agents/{slug}").json()["agent"]


def test_an_archived_agent_refuses_runs_and_reruns(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    earlier = admin.agents.run(slug, {"input": {"n": 1}}, wait_for_completion=30)
    assert earlier.status.value == "completed"
    admin.agents.archive(slug)

    with pytest.raises(ServiceConflictError) as run:
        admin.agents.run(slug, {"input": {"n": 2}})
    assert run.value.status == 409
    assert issues(run.value) == [("path.agentId", _archived_message("Agent", slug))]
    with pytest.raises(ServiceConflictError) as waited:
        admin.agents.run(slug, {"input": {"n": 3}}, wait_for_completion=5)
    assert "archived" in issues(waited.value)[0][1]
    with pytest.raises(ServiceConflictError) as rerun:
        admin.agents.executions.rerun(earlier.execution_id)
    assert rerun.value.status == 409
    assert issues(rerun.value) == [("path.agentId", _archived_message("Agent", slug))]

    # nothing was created
    listed = admin.agents.executions.list(slug)
    assert [execution.id for execution in listed.executions] == [earlier.execution_id]
    assert admin.agents.get(slug).agent.stats.total_executions == 1


def test_an_archived_agents_executions_and_feedback_stay_readable_and_editable(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    done = admin.agents.run(slug, {"input": {"invoice": "A-1"}}, wait_for_completion=30)
    assert done.status.value == "completed"
    admin.agents.executions.update_feedback(done.execution_id, {"body": "before", "rating": "pass"})
    admin.agents.archive(slug)

    execution = admin.agents.executions.get(done.execution_id).execution
    assert execution.status.value == "completed"
    assert execution.output == {"echo": {"invoice": "A-1"}, "files": {}}
    assert [e.id for e in admin.agents.executions.list(slug).executions] == [done.execution_id]

    feedback = admin.agents.executions.get_feedback(done.execution_id).feedback
    assert feedback is not None and feedback.body == "before"
    changed = admin.agents.executions.update_feedback(
        done.execution_id, {"body": "after", "expected": {"total": 7}}
    )
    assert changed.feedback is not None and changed.feedback.body == "after"
    assert changed.expected == {"total": 7}
    admin.agents.executions.upload_expected(done.execution_id, b'{"a": 1}', name="a.json")
    expected = admin.agents.executions.list_expected(done.execution_id)
    assert [file.name for file in expected.files] == ["a.json"]
    promoted = admin.agents.executions.promote(done.execution_id, {"name": "archived-example"})
    assert promoted.example_name == "archived-example"
    assert admin.agents.get(slug).agent.stats.example_count == 1
    assert admin.agents.get(slug).agent.archived_at is not None


def test_an_execution_running_when_its_agent_is_archived_goes_on(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    started = admin.agents.run(slug, {"input": {"sleep": 1}})
    admin.agents.archive(slug)
    assert wait_for(admin, started.execution_id).status.value == "completed"


def test_an_archived_agent_keeps_its_slug_and_stays_editable(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    archived = admin.agents.archive(slug).agent
    with pytest.raises(ServiceConflictError) as taken:
        admin.agents.create({"name": "Another", "slug": slug})
    assert taken.value.status == 409
    assert _listed_agents(admin, slug, include_archived=True) == [slug]

    renamed = admin.agents.update(slug, {"name": "Renamed while archived"}).agent
    assert renamed.name == "Renamed while archived"
    assert renamed.archived_at == archived.archived_at
    admin.agents.put_file(slug, {"content": "notes\n"}, path="notes.txt")
    listing = admin.agents.get(slug, include=["files"]).files
    assert isinstance(listing, list)
    assert "notes.txt" in [entry.path for entry in listing]
    assert admin.agents.get(slug).agent.archived_at == archived.archived_at


def test_a_restored_agent_is_listed_and_runs_again(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    earlier = admin.agents.run(slug, {"input": {"n": 1}}, wait_for_completion=30)
    archived = admin.agents.archive(slug).agent
    assert archived.archived_at is not None

    restored = admin.agents.restore(slug).agent
    assert restored.archived_at is None
    assert restored.updated_at >= archived.updated_at
    assert _listed_agents(admin, slug) == [slug]
    assert admin.agents.get(slug).agent.archived_at is None
    again = admin.agents.restore(slug).agent  # restoring an active agent changes nothing
    assert again.archived_at is None and again.updated_at == restored.updated_at

    answer = admin.agents.run(slug, {"input": {"n": 2}}, wait_for_completion=30)
    assert answer.status.value == "completed"
    assert answer.output == {"echo": {"n": 2}, "files": {}}
    rerun = admin.agents.executions.rerun(earlier.execution_id)
    assert wait_for(admin, rerun.execution_id).status.value == "completed"


def test_a_key_that_cannot_see_the_agent_gets_404(
    server: RunningServer, admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    other = new_agent(admin, unique)
    with server.client(server.key("elsewhere", agents=(other,))) as scoped:
        with pytest.raises(ServiceNotFoundError):
            scoped.agents.archive(slug)
        with pytest.raises(ServiceNotFoundError):
            scoped.agents.restore(slug)
        # the same access as updating: a key scoped to the agent may archive it
        assert scoped.agents.archive(other).agent.archived_at is not None
        assert scoped.agents.restore(other).agent.archived_at is None
    assert admin.agents.get(slug).agent.archived_at is None
    with pytest.raises(ServiceNotFoundError):
        admin.agents.archive(f"missing-{unique}")


# -- workflows ----------------------------------------------------------------------------------


def _constant(slug: str, value: int, kind: str = "workflow") -> str:
    return (
        f"name: {slug}\nkind: {kind}\nsteps:\n  - id: only\n    type: transform\n"
        f"    value: {value}\nresult: ${{{{ steps.only.output }}}}\n"
    )


def test_an_archived_workflow_leaves_the_list_and_refuses_runs(
    admin: ServiceClient, unique: str
) -> None:
    slug = f"arch-{unique}"
    created = create(admin, _constant(slug, 5))
    assert created.archived_at is None
    assert _listed_workflows(admin, slug) == [slug]

    archived = admin.workflows.archive(slug)
    assert isinstance(archived, models.WorkflowSummary)
    assert archived.id == created.id and archived.archived_at is not None
    assert archived.version_id == created.version_id
    assert _listed_workflows(admin, slug) == []
    assert _listed_workflows(admin, slug, include_archived=True) == [slug]
    assert admin.workflows.list(name=slug).total == 0
    assert admin.workflows.list(name=slug, include_archived=True).total == 1
    assert admin.workflows.get(slug).archived_at == archived.archived_at
    again = admin.workflows.archive(created.id)
    assert again.archived_at == archived.archived_at and again.updated_at == archived.updated_at

    with pytest.raises(ServiceConflictError) as refused:
        admin.workflows.run(slug, wait_for_completion=5)
    assert refused.value.status == 409
    assert issues(refused.value) == [("path.id", _archived_message("Workflow", slug))]
    assert isinstance(created.version_id, str)
    with pytest.raises(ServiceConflictError):
        admin.workflows.run(created.id, version=created.version_id)
    assert admin.workflows.executions.list(slug).total == 0
    assert admin.workflows.versions(slug).total == 1
    with pytest.raises(ServiceConflictError):  # the slug stays taken
        create(admin, _constant(slug, 6))


def test_a_restored_workflow_runs_again(admin: ServiceClient, unique: str) -> None:
    slug = f"back-{unique}"
    create(admin, _constant(slug, 8))
    before = admin.workflows.run(slug, wait_for_completion=30)
    assert before.result == 8
    admin.workflows.archive(slug)

    restored = admin.workflows.restore(slug)
    assert restored.archived_at is None
    assert _listed_workflows(admin, slug) == [slug]
    assert admin.workflows.restore(slug).archived_at is None  # again: nothing changes
    answer = admin.workflows.run(slug, wait_for_completion=30)
    assert run_status(answer) == "completed" and answer.result == 8
    assert admin.workflows.executions.list(slug).total == 2


def test_archiving_a_workflow_needs_the_create_right(
    server: RunningServer, admin: ServiceClient, unique: str
) -> None:
    slug = f"right-{unique}"
    create(admin, _constant(slug, 1))
    with server.client(server.key("x", scope_all=True)) as reader:
        assert _listed_workflows(reader, slug) == [slug]
        with pytest.raises(ServiceForbiddenError) as forbidden:
            reader.workflows.archive(slug)
        assert forbidden.value.status == 403
        admin.workflows.archive(slug)
        with pytest.raises(ServiceForbiddenError):
            reader.workflows.restore(slug)
    assert admin.workflows.get(slug).archived_at is not None
    blind_key = scoped_key(server, can_create=True)  # may create, but cannot see it
    with server.client(blind_key) as blind, pytest.raises(ServiceNotFoundError):
        blind.workflows.restore(slug)
    assert admin.workflows.get(slug).archived_at is not None


def test_a_workflow_using_an_archived_block_still_runs(admin: ServiceClient, unique: str) -> None:
    block = f"blk-{unique}"
    create(
        admin,
        f"name: {block}\nkind: block\ninputs:\n  n: integer\nsteps:\n"
        "  - id: twice\n    type: transform\n    value: ${{ inputs.n * 2 }}\n"
        "result: ${{ steps.twice.output }}\n",
    )
    caller = f"caller-{unique}-{secrets.token_hex(2)}"
    create(
        admin,
        f"name: {caller}\nsteps:\n  - id: call\n    type: block\n    block: {block}\n"
        "    input:\n      n: 21\nresult: ${{ steps.call.output }}\n",
    )
    archived = admin.workflows.archive(block)
    assert archived.kind.value == "block" and archived.archived_at is not None
    assert [w.slug for w in admin.workflows.list(kind="block", name=block).data] == []
    assert [
        w.slug for w in admin.workflows.list(kind="block", name=block, include_archived=True).data
    ] == [block]

    with pytest.raises(ServiceConflictError):  # the block itself cannot be run through the API
        admin.workflows.run(block, {"input": {"n": 1}})
    answer = admin.workflows.run(caller, wait_for_completion=30)
    assert run_status(answer) == "completed", answer.error
    assert answer.result == 42
    block_runs = admin.workflows.executions.list(block).data
    assert [run.result for run in block_runs] == [42]
    parent = summary_of(admin.workflows.executions.get(answer.execution_id))
    assert parent.result == 42


def test_a_workflow_using_an_archived_agent_still_runs(admin: ServiceClient, unique: str) -> None:
    agent = new_agent(admin, unique)
    slug = f"uses-agent-{unique}"
    create(
        admin,
        f"name: {slug}\nsteps:\n  - id: ask\n    type: agent\n    agent: {agent}\n"
        "    input:\n      n: 4\nresult: ${{ steps.ask.output.echo.n }}\n",
    )
    admin.agents.archive(agent)
    answer = admin.workflows.run(slug, wait_for_completion=30)
    assert run_status(answer) == "completed", answer.error
    assert answer.result == 4
    runs = admin.agents.executions.list(agent).executions
    assert [run.status.value for run in runs] == ["completed"]
