"""The workflows API over loopback with the generated client, on SQLite and PostgreSQL:
create and release, runs (sync, async, pinned versions, files), steps, cancellation, lists,
scopes."""

from __future__ import annotations

import time

import httpx
import pytest

from generated.agents.client import (
    AsyncServiceClient,
    ServiceClient,
    ServiceError,
    ServiceForbiddenError,
    ServiceNotFoundError,
    ServiceValidationError,
)
from tests.agents.run_support import new_agent
from tests.agents.support import RunningServer
from tests.agents.workflows.api_support import (
    create,
    issue_messages,
    run_status,
    scoped_key,
    steps_of,
    summary_of,
    wait_for_status,
    wait_for_step,
)

BLOCK = """\
name: double-{u}
kind: block
title: Doubler
inputs:
  n: integer
steps:
  - id: twice
    type: transform
    value: ${{{{ inputs.n * 2 }}}}
result: ${{{{ steps.twice.output }}}}
"""

PIPELINE = """\
name: pipeline-{u}
title: Pipeline {u}
description: An agent, a parallel pair (transform and block) and a step allowed to fail.
inputs:
  n:
    type: integer
    default: 1
steps:
  - id: ask
    type: agent
    agent: {agent}
    input:
      n: ${{{{ inputs.n }}}}
  - id: left
    type: transform
    value: ${{{{ steps.ask.output.echo.n + 1 }}}}
  - id: right
    type: block
    block: double-{u}
    input:
      n: ${{{{ steps.ask.output.echo.n }}}}
  - id: broken
    type: agent
    agent: {agent}
    allow_failure: true
    input:
      fail: on purpose
result:
  left: ${{{{ steps.left.output }}}}
  right: ${{{{ steps.right.output }}}}
  broken: ${{{{ steps.broken.status }}}}
"""


def _constant(slug: str, value: int) -> str:
    return f"name: {slug}\nsteps:\n  - id: only\n    type: transform\n    value: {value}\n" + (
        "result: ${{ steps.only.output }}\n"
    )


def _waiting(slug: str, seconds: str) -> str:
    return (
        f"name: {slug}\nsteps:\n  - id: pause\n    type: wait\n    duration: {seconds}\n"
        "  - id: after\n    type: transform\n    needs: pause\n    value: done\n"
        "result: ${{ steps.after.output }}\n"
    )


# -- create, get, release, versions ----------------------------------------------------------


def test_create_get_release_and_versions_newest_first(admin: ServiceClient, unique: str) -> None:
    slug = f"const-{unique}"
    created = create(admin, _constant(slug, 1), version="1.0.0")
    assert created.slug == slug and created.id.startswith("wf_")
    assert created.kind.value == "workflow" and created.version == "1.0.0"
    assert isinstance(created.definition, dict) and created.definition["name"] == slug

    released = admin.workflows.release(slug, {"yamlContent": _constant(slug, 2)})
    assert released.is_current and released.version == "2"

    got = admin.workflows.get(created.id)
    assert got.version_id == released.id and got.yaml_content == _constant(slug, 2)

    versions = admin.workflows.versions(slug)
    assert [v.version for v in versions.data] == ["2", "1.0.0"]
    assert [v.is_current for v in versions.data] == [True, False]
    assert versions.total == 2
    assert [v.version for v in admin.workflows.versions(slug, limit=1, offset=1).data] == ["1.0.0"]

    with pytest.raises(ServiceError) as taken:
        create(admin, _constant(slug, 3))
    assert taken.value.status == 409
    with pytest.raises(ServiceError) as tag_used:
        admin.workflows.release(slug, {"yamlContent": _constant(slug, 3), "version": "1.0.0"})
    assert tag_used.value.status == 409


def test_invalid_definitions_answer_400_with_line_numbers(
    admin: ServiceClient, unique: str
) -> None:
    yaml = (
        f"name: bad-{unique}\nsteps:\n  - id: a\n    type: transform\n    valeu: 1\n"
        "  - id: b\n    type: transform\n    value: ${{ inputs.missing }}\n"
    )
    with pytest.raises(ServiceValidationError) as caught:
        admin.workflows.create({"yamlContent": yaml})
    messages = issue_messages(caught.value)
    assert any(message.startswith("line 5, column 5:") for message in messages), messages
    assert any(message.startswith("line 8,") for message in messages), messages
    assert {issue["field"] for issue in caught.value.envelope["issues"]} == {"body.yamlContent"}
    with pytest.raises(ServiceNotFoundError):
        admin.workflows.get(f"bad-{unique}")

    slug = f"named-{unique}"
    create(admin, _constant(slug, 1))
    with pytest.raises(ServiceValidationError) as renamed:
        admin.workflows.release(slug, {"yamlContent": _constant(f"other-{unique}", 1)})
    assert issue_messages(renamed.value)[0].startswith("line 1, column 1:")
    with pytest.raises(ServiceValidationError):
        admin.workflows.release(slug, {"yamlContent": "steps: [\n"})
    assert admin.workflows.versions(slug).total == 1


# -- runs --------------------------------------------------------------------------------------


def test_a_multi_step_workflow_runs_agent_block_parallel_and_failing_steps(
    admin: ServiceClient, unique: str
) -> None:
    agent = new_agent(admin, unique)
    create(admin, BLOCK.format(u=unique))
    create(admin, PIPELINE.format(u=unique, agent=agent))

    answer = admin.workflows.run(f"pipeline-{unique}", {"input": {"n": 3}}, wait_for_completion=60)
    assert run_status(answer) == "completed", answer.error
    assert answer.result == {"left": 4, "right": 6, "broken": "failed"}

    execution = summary_of(admin.workflows.executions.get(answer.execution_id, include_steps=True))
    steps = steps_of(execution)
    assert list(steps) == ["ask", "left", "right", "broken"]
    assert steps["ask"].input == {"n": 3}
    assert steps["ask"].output["echo"] == {"n": 3}
    assert steps["right"].output == 6
    assert steps["broken"].status.value == "failed" and "gave up: on purpose" in (
        steps["broken"].error or ""
    )
    assert all(step.started_at is not None and step.duration_ms is not None for step in
               steps.values())  # fmt: skip
    summary = summary_of(admin.workflows.executions.get(answer.execution_id))
    assert summary.status.value == "completed" and summary.trigger_input == {"n": 3}
    assert summary.workflow.name == f"Pipeline {unique}"

    # the agent steps are agent executions of the agent, with the step's input
    agent_runs = admin.agents.executions.list(agent).executions
    assert sorted(run.status.value for run in agent_runs) == ["completed", "failed"]
    # the block ran as its own execution
    block_runs = admin.workflows.executions.list(f"double-{unique}").data
    assert [run.result for run in block_runs] == [6]


def test_a_failing_step_fails_the_workflow_and_skips_its_dependants(
    admin: ServiceClient, unique: str
) -> None:
    agent = new_agent(admin, unique)
    yaml = (
        f"name: fails-{unique}\nsteps:\n  - id: boom\n    type: agent\n    agent: {agent}\n"
        "    input:\n      fail: badly\n  - id: later\n    type: transform\n    needs: boom\n"
        "    value: 1\n"
    )
    create(admin, yaml)
    answer = admin.workflows.run(f"fails-{unique}", wait_for_completion=60)
    assert run_status(answer) == "failed"
    assert isinstance(answer.error, str) and answer.error.startswith("step 'boom' failed:")
    steps = steps_of(wait_for_status(admin, answer.execution_id))
    assert steps["boom"].status.value == "failed"
    assert steps["later"].status.value == "skipped"


def test_an_agent_step_runs_an_agent_whose_api_trigger_is_disabled_or_that_is_archived(
    admin: ServiceClient, unique: str
) -> None:
    # the API trigger and archiving govern runs through the API, not workflows using the agent
    agent = new_agent(admin, unique)
    admin.agents.update(agent, {"config": {"triggers": {"api": {"enabled": False}}}})
    yaml = (
        f"name: internal-{unique}\nsteps:\n  - id: ask\n    type: agent\n    agent: {agent}\n"
        "    input:\n      n: 7\nresult: ${{ steps.ask.output.echo.n }}\n"
    )
    create(admin, yaml)
    answer = admin.workflows.run(f"internal-{unique}", wait_for_completion=60)
    assert (run_status(answer), answer.result) == ("completed", 7)
    admin.agents.archive(agent)
    again = admin.workflows.run(f"internal-{unique}", wait_for_completion=60)
    assert (run_status(again), again.result) == ("completed", 7)


def test_runs_pin_a_version_or_take_the_latest(admin: ServiceClient, unique: str) -> None:
    slug = f"pinned-{unique}"
    first = create(admin, _constant(slug, 1))
    admin.workflows.release(slug, {"yamlContent": _constant(slug, 2), "version": "v2"})
    latest = admin.workflows.run(slug, wait_for_completion=30)
    assert isinstance(first.version_id, str)
    pinned = admin.workflows.run(slug, version=first.version_id, wait_for_completion=30)
    by_tag = admin.workflows.run(slug, version="v2", wait_for_completion=30)
    assert (latest.result, pinned.result, by_tag.result) == (2, 1, 2)
    summary = summary_of(admin.workflows.executions.get(pinned.execution_id))
    assert summary.version_id == first.version_id
    with pytest.raises(ServiceNotFoundError):
        admin.workflows.run(slug, version="wfh_nope")


def test_unfit_inputs_are_rejected_and_files_reach_agent_steps(
    admin: ServiceClient, unique: str
) -> None:
    agent = new_agent(admin, unique)
    yaml = (
        f"name: files-{unique}\ninputs:\n  doc: file\n  label: string\nsteps:\n"
        f"  - id: read\n    type: agent\n    agent: {agent}\n    input:\n"
        "      doc: ${{ inputs.doc }}\n      label: ${{ inputs.label }}\n"
        "result: ${{ steps.read.output.files }}\n"
    )
    create(admin, yaml)
    create(admin, _constant(f"rw-{unique}", 1))
    refused = admin.workflows.run(f"files-{unique}", {"input": {"label": 5}}, wait_for_completion=5)
    assert run_status(refused) == "rejected"
    assert isinstance(refused.error, str) and refused.error.startswith("invalid input:")
    assert "doc" in refused.error and "label" in refused.error
    assert admin.agents.executions.list(agent).total == 0
    unknown_step = admin.workflows.run(
        f"rw-{unique}", {"overrides": {"steps": {"nope": {}}}}, wait_for_completion=5
    )
    assert run_status(unknown_step) == "rejected"
    assert isinstance(unknown_step.error, str) and "nope" in unknown_step.error

    done = admin.workflows.executions.run_and_wait(
        f"files-{unique}",
        input={"label": "invoice", "doc": ("invoice.pdf", b"%PDF-1.7 twelve", "application/pdf")},
        timeout_seconds=60,
    )
    assert run_status(done) == "completed", done.error
    assert done.result == {"invoice.pdf": len(b"%PDF-1.7 twelve")}
    summary = summary_of(admin.workflows.executions.get(done.execution_id))
    assert summary.trigger_input["doc"]["name"] == "invoice.pdf"
    assert summary.trigger_input["label"] == "invoice"


def test_a_sync_wait_returns_the_current_status_when_it_elapses(
    admin: ServiceClient, unique: str
) -> None:
    slug = f"slow-{unique}"
    create(admin, _waiting(slug, "3s"))
    started = time.monotonic()
    answer = admin.workflows.run(slug, wait_for_completion=1)
    assert 0.9 <= time.monotonic() - started < 2.9
    assert run_status(answer) in {"pending", "running", "waiting"}
    assert answer.result is None
    done = wait_for_status(admin, answer.execution_id)
    assert done.status.value == "completed" and done.result == "done"
    with pytest.raises(ServiceValidationError):
        admin.workflows.run(slug, wait_for_completion=61)


def test_run_and_wait_returns_status_and_result(admin: ServiceClient, unique: str) -> None:
    slug = f"rw-{unique}"
    create(admin, _constant(slug, 7))
    outcome = admin.workflows.executions.run_and_wait(slug, input={}, timeout_seconds=30)
    assert run_status(outcome) == "completed"
    assert outcome.result == 7 and outcome.execution_id.startswith("wfx_")


class CountingTransport(httpx.HTTPTransport):
    """The network, counting requests by method and path."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(f"{request.method} {request.url.path}")
        return super().handle_request(request)


@pytest.mark.parametrize(
    ("pause", "request_timeout", "polled"),
    [
        ("1s", 60.0, False),  # the server holds the run until it ends: one request
        ("2s", 3.0, True),  # too short a request timeout to hold: the run, then polls
    ],
)
def test_run_and_wait_is_held_by_the_server_or_polls(
    server: RunningServer,
    admin_key: str,
    admin: ServiceClient,
    unique: str,
    pause: str,
    request_timeout: float,
    polled: bool,
) -> None:
    slug = f"held-{unique}"
    create(admin, _waiting(slug, pause))
    network = CountingTransport()
    with ServiceClient(
        api_key=admin_key, base_url=server.url, timeout_seconds=request_timeout, transport=network
    ) as client:
        outcome = client.workflows.executions.run_and_wait(slug, timeout_seconds=30)
    assert run_status(outcome) == "completed" and outcome.result == "done"
    run, *polls = network.requests
    assert run == f"POST /api/v1/workflows/{slug}/run"
    assert bool(polls) == polled
    assert all(poll.startswith("GET /api/v1/workflows/executions/") for poll in polls)


async def test_the_async_client_runs_and_waits_with_a_file(
    server: RunningServer, admin_key: str, admin: ServiceClient, unique: str
) -> None:
    slug = f"arw-{unique}"
    create(admin, f"name: {slug}\ninputs:\n  doc: file\nsteps:\n  - id: name\n"
           "    type: transform\n    value: ${{ inputs.doc.name }}\n"
           "result: ${{ steps.name.output }}\n")  # fmt: skip
    async with AsyncServiceClient(api_key=admin_key, base_url=server.url) as client:
        outcome = await client.workflows.executions.run_and_wait(
            slug, input={"doc": ("notes.txt", b"hello")}, timeout_seconds=30
        )
    assert run_status(outcome) == "completed" and outcome.result == "notes.txt"


# -- cancellation ----------------------------------------------------------------------------


def test_cancel_a_waiting_execution_then_again(admin: ServiceClient, unique: str) -> None:
    slug = f"wait-{unique}"
    create(admin, _waiting(slug, "60s"))
    run = admin.workflows.run(slug)
    wait_for_status(admin, run.execution_id, {"waiting"})
    first = admin.workflows.executions.cancel(run.execution_id)
    assert (first.status.value, first.was_status.value) == ("cancellation-requested", "waiting")
    again = admin.workflows.executions.cancel(run.execution_id)
    assert again.status.value in {"cancellation-requested", "already-terminal"}
    ended = wait_for_status(admin, run.execution_id, timeout=10)
    assert ended.status.value == "cancelled"
    assert ended.cancel_requested_at is not None
    steps = steps_of(ended)
    assert steps["pause"].status.value == "cancelled"
    assert steps["after"].status.value == "cancelled"
    last = admin.workflows.executions.cancel(run.execution_id)
    assert (last.status.value, last.was_status.value) == ("already-terminal", "cancelled")


def test_cancel_a_running_agent_step(admin: ServiceClient, unique: str) -> None:
    agent = new_agent(admin, unique)
    yaml = (
        f"name: long-{unique}\nsteps:\n  - id: sleepy\n    type: agent\n    agent: {agent}\n"
        "    input:\n      sleep: 30\n  - id: next\n    type: transform\n    needs: sleepy\n"
        "    value: 1\n"
    )
    create(admin, yaml)
    run = admin.workflows.run(f"long-{unique}")
    wait_for_step(admin, run.execution_id, "sleepy", "running")
    answer = admin.workflows.executions.cancel(run.execution_id)
    assert (answer.status.value, answer.was_status.value) == ("cancellation-requested", "running")
    started = time.monotonic()
    ended = wait_for_status(admin, run.execution_id, timeout=20)
    assert time.monotonic() - started < 15
    assert ended.status.value == "cancelled"
    assert steps_of(ended)["next"].status.value == "cancelled"
    agent_run = admin.agents.executions.list(agent).executions[0]
    assert agent_run.status.value == "cancelled"


def test_a_completed_execution_is_already_terminal(admin: ServiceClient, unique: str) -> None:
    slug = f"done-{unique}"
    create(admin, _constant(slug, 1))
    run = admin.workflows.run(slug, wait_for_completion=30)
    answer = admin.workflows.executions.cancel(run.execution_id)
    assert (answer.status.value, answer.was_status.value) == ("already-terminal", "completed")
    with pytest.raises(ServiceNotFoundError):
        admin.workflows.executions.cancel("wfx_000000000000000000000000")


# -- lists -----------------------------------------------------------------------------------


def test_the_executions_list_filters(admin: ServiceClient, unique: str) -> None:
    slug = f"listed-{unique}"
    create(admin, _constant(slug, 1))
    ids = [
        admin.workflows.run(slug, {"exampleId": f"ex-{n}"}, wait_for_completion=30).execution_id
        for n in range(3)
    ]
    page = admin.workflows.executions.list(slug)
    assert [execution.id for execution in page.data] == ids[::-1] and page.total == 3
    assert [e.id for e in admin.workflows.executions.list(slug, limit=1, offset=1).data] == [ids[1]]
    assert admin.workflows.executions.list(slug, status=["completed"]).total == 3
    assert admin.workflows.executions.list(slug, status=["failed", "cancelled"]).total == 0
    assert admin.workflows.executions.list(slug, from_date="now()-1h").total == 3
    assert admin.workflows.executions.list(slug, from_date="now()+1d").total == 0
    assert admin.workflows.executions.list(slug, to_date="2001-01-01T00:00:00Z").total == 0
    assert admin.workflows.executions.list(slug, to_date="now()").total == 3
    only = admin.workflows.executions.list(slug, example_id="ex-1")
    assert [execution.id for execution in only.data] == [ids[1]]
    with pytest.raises(ServiceValidationError) as caught:
        admin.workflows.executions.list(slug, from_date="yesterday")
    assert caught.value.envelope["issues"][0]["field"] == "query.fromDate"


def test_the_workflows_list_filters(admin: ServiceClient, unique: str) -> None:
    create(admin, BLOCK.format(u=unique))
    create(admin, _constant(f"alpha-{unique}", 1))
    create(admin, _constant(f"beta-{unique}", 1))
    found = admin.workflows.list(search=unique.upper())
    assert [w.slug for w in found.data] == [
        f"alpha-{unique}", f"beta-{unique}", f"double-{unique}",
    ]  # fmt: skip
    assert [w.slug for w in admin.workflows.list(search=unique, kind="block").data] == [
        f"double-{unique}"
    ]
    assert admin.workflows.list(name=f"beta-{unique}").total == 1
    page = admin.workflows.list(search=unique, limit=1, offset=1)
    assert [w.slug for w in page.data] == [f"beta-{unique}"] and page.total == 3
    with pytest.raises(ServiceValidationError):
        admin.workflows.list(limit=101)


# -- scopes ----------------------------------------------------------------------------------


def test_keys_see_only_the_workflows_in_their_scope(
    server: RunningServer, admin: ServiceClient, unique: str
) -> None:
    mine, theirs = f"mine-{unique}", f"theirs-{unique}"
    create(admin, _constant(mine, 1))
    create(admin, _constant(theirs, 2))
    hidden = admin.workflows.run(theirs, wait_for_completion=30)
    with server.client(scoped_key(server, workflows=(mine,))) as scoped:
        assert [w.slug for w in scoped.workflows.list(search=unique).data] == [mine]
        assert scoped.workflows.run(mine, wait_for_completion=30).result == 1
        for call in (
            lambda: scoped.workflows.get(theirs),
            lambda: scoped.workflows.run(theirs),
            lambda: scoped.workflows.versions(theirs),
            lambda: scoped.workflows.executions.list(theirs),
            lambda: scoped.workflows.release(theirs, {"yamlContent": _constant(theirs, 3)}),
            lambda: scoped.workflows.executions.get(hidden.execution_id),
            lambda: scoped.workflows.executions.cancel(hidden.execution_id),
        ):
            with pytest.raises(ServiceNotFoundError):
                call()
        with pytest.raises(ServiceForbiddenError):
            create(scoped, _constant(f"new-{unique}", 1))
    with server.client(scoped_key(server, can_create=True)) as creator:
        made = create(creator, _constant(f"made-{unique}", 1))
        assert [w.id for w in creator.workflows.list().data] == [made.id]
