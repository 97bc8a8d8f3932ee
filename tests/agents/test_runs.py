"""Agent runs through the real server and the generated client, on SQLite and PostgreSQL:
real agent programs, JSON and file inputs, outputs, schemas, failures, waits and reruns."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy.orm import Session

from generated.agents import models
from generated.agents.client import (
    ServiceClient,
    ServiceError,
    ServiceForbiddenError,
    ServiceNotFoundError,
    ServiceValidationError,
)
from handlers.agents.storage.schema import Execution
from tests.agents.feedback_support import insert_execution
from tests.agents.run_support import download, issues, new_agent, wait_for
from tests.agents.support import RunningServer

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 8


def test_a_new_agent_runs_its_starter_program(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique, program=None)

    answer = admin.agents.run(slug, {"input": {"customer": "ACME"}}, wait_for_completion=30)

    assert answer.status.value == "completed"
    assert answer.output == {"echo": {"customer": "ACME"}}
    assert answer.schema_valid is None and answer.error is None


def test_each_run_runs_the_workspace_as_it_was_when_the_run_was_made(
    admin: ServiceClient, unique: str
) -> None:
    """The worker keeps recent workspaces in memory by snapshot hash: a changed file is a new
    snapshot, and a change back finds the first one again."""
    slug = new_agent(admin, unique, program=None)
    program = "import json, os, pathlib\nout = pathlib.Path(os.environ['AGENT_OUTPUT_DIR'])\n"
    outputs = []
    for version in ("one", "two", "one"):
        body = program + f"(out / 'output.json').write_text(json.dumps({{'v': '{version}'}}))\n"
        admin.agents.put_file(slug, {"content": body}, path="main.py")
        answer = admin.agents.run(slug, {"input": {}}, wait_for_completion=30)
        assert answer.status.value == "completed", answer.error
        outputs.append(answer.output)
    assert outputs == [{"v": "one"}, {"v": "two"}, {"v": "one"}]


def test_an_async_run_answers_at_once_and_its_outputs_can_be_downloaded(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)

    answer = admin.agents.run(slug, {"input": {"n": 1}, "metadata": {"ticket": "SUP-1"}})

    assert answer.status.value in ("created", "pending")
    assert answer.output is None and answer.error is None
    execution = wait_for(admin, answer.execution_id, include=["files"])
    assert execution.status.value == "completed"
    assert execution.output == {"echo": {"n": 1}, "files": {}}
    assert execution.input == {"n": 1} and execution.metadata == {"ticket": "SUP-1"}
    assert isinstance(execution.started_at, datetime)
    assert isinstance(execution.completed_at, datetime)
    assert execution.created_at <= execution.started_at <= execution.completed_at
    assert isinstance(execution.duration_ms, int) and execution.duration_ms >= 0
    assert isinstance(execution.files, models.ExecutionFiles)
    assert [f.name for f in execution.files.output] == ["tables/lines.csv"]
    assert execution.files.input == [] and execution.files.has_issues and execution.files.has_trace
    assert download(admin, answer.execution_id, "output", "tables/lines.csv") == (
        b"item,amount\nwidget,1200\n"
    )
    assert download(admin, answer.execution_id, "issues", "issues.md") == b"# Issues\n- none\n"
    trace = download(admin, answer.execution_id, "trace", "trace.jsonl")
    assert [json.loads(line) for line in trace.splitlines()] == [{"step": "done"}]


def test_file_inputs_travel_as_multipart_parts(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)

    answer = admin.agents.run(
        slug,
        {"input": {"customer": "ACME"}},
        files={"invoice": ("invoice.pdf", PDF, "application/pdf"), "notes": ("n.txt", b"hi")},
        wait_for_completion=30,
    )

    assert answer.status.value == "completed"
    assert answer.output == {
        "echo": {
            "customer": "ACME",
            "invoice": {"$file": "input/invoice.pdf"},
            "notes": {"$file": "input/n.txt"},
        },
        "files": {"invoice.pdf": len(PDF), "n.txt": 2},
    }
    execution = admin.agents.executions.get(answer.execution_id, include=["files"]).execution
    assert isinstance(execution.files, models.ExecutionFiles)
    assert [(f.name, f.size_bytes, f.content_type) for f in execution.files.input] == [
        ("invoice.pdf", len(PDF), "application/pdf"),
        ("n.txt", 2, "text/plain"),
    ]
    assert download(admin, answer.execution_id, "input", "invoice.pdf") == PDF


def test_an_input_the_schema_refuses_is_a_400_naming_each_field_and_creates_nothing(
    admin: ServiceClient, unique: str
) -> None:
    schema = {
        "type": "object",
        "required": ["customer", "amount"],
        "properties": {"customer": {"type": "string"}, "amount": {"type": "number"}},
    }
    slug = new_agent(admin, unique, config={"entrypoint": ["python", "main.py"],
                                            "inputSchema": schema})  # fmt: skip

    with pytest.raises(ServiceValidationError) as refused:
        admin.agents.run(slug, {"input": {"amount": "12"}})

    found = issues(refused.value)
    assert [field for field, _ in found] == ["body.input.amount", "body.input.customer"]
    assert "'12' is not of type 'number'" in found[0][1]
    assert "'customer' is a required property" in found[1][1]
    with pytest.raises(ServiceValidationError) as multipart:
        admin.agents.run(slug, {"input": {"customer": 5, "amount": 1}}, files={"f": b"x"})
    assert [field for field, _ in issues(multipart.value)] == ["body._json.input.customer"]
    assert admin.agents.executions.list(slug).total == 0
    ok = admin.agents.run(slug, {"input": {"customer": "ACME", "amount": 12}},
                          wait_for_completion=30)  # fmt: skip
    assert ok.status.value == "completed"


def test_the_output_schema_decides_schema_valid(admin: ServiceClient, unique: str) -> None:
    matching = {"type": "object", "required": ["echo"]}
    missing = {"type": "object", "required": ["total"]}
    results = []
    for schema in (matching, missing):
        config = {"entrypoint": ["python", "main.py"], "outputSchema": schema}
        slug = new_agent(admin, unique, config=config)
        results.append(admin.agents.run(slug, {"input": {}}, wait_for_completion=30))

    assert [(r.status.value, r.schema_valid) for r in results] == [
        ("completed", True),
        ("completed", False),
    ]


def test_a_failing_agent_fails_with_its_reason(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)

    answer = admin.agents.run(slug, {"input": {"fail": "no invoice"}}, wait_for_completion=30)

    assert answer.status.value == "failed"
    assert isinstance(answer.error, str)
    assert answer.error.startswith("exit code 3: ")
    assert "the agent gave up: no invoice" in answer.error
    assert answer.output is None


def test_the_manifest_timeout_stops_a_long_execution(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique, config={"entrypoint": ["python", "main.py"],
                                            "timeoutSeconds": 1})  # fmt: skip

    answer = admin.agents.run(slug, {"input": {"sleep": 30}}, wait_for_completion=30)

    assert (answer.status.value, answer.error) == ("failed", "timed out after 1 s")


def test_an_elapsed_wait_answers_timeout_and_the_execution_goes_on(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)

    answer = admin.agents.run(slug, {"input": {"sleep": 2}}, wait_for_completion=1)

    assert answer.status.value == "timeout"
    assert answer.output is None
    assert wait_for(admin, answer.execution_id).status.value == "completed"


def test_a_rerun_runs_the_stored_input_again_and_leaves_the_source_alone(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    source = admin.agents.run(
        slug, {"input": {"n": 7}}, files={"doc": ("doc.txt", b"abc")}, wait_for_completion=30
    )
    before = admin.agents.executions.get(source.execution_id).execution

    rerun = admin.agents.executions.rerun(source.execution_id)

    assert rerun.source_execution_id == source.execution_id
    assert rerun.execution_id != source.execution_id
    assert rerun.status.value in ("created", "pending")
    again = wait_for(admin, rerun.execution_id)
    assert again.status.value == "completed"
    assert again.output == source.output
    assert again.source_execution_id == source.execution_id
    assert admin.agents.executions.get(source.execution_id).execution == before


def test_a_rerun_the_current_input_schema_refuses_is_rejected(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    source = admin.agents.run(slug, {"input": {"n": 1}}, wait_for_completion=30)
    schema = {"type": "object", "required": ["customer"]}
    admin.agents.update(slug, {"config": {"entrypoint": ["python", "main.py"],
                                          "inputSchema": schema}})  # fmt: skip

    rerun = admin.agents.executions.rerun(source.execution_id)

    assert rerun.status.value == "rejected"
    execution = admin.agents.executions.get(rerun.execution_id).execution
    assert isinstance(execution.error, str)
    assert "'customer' is a required property" in execution.error


def test_bad_run_requests_are_refused_with_the_field(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    cases: list[tuple[dict[str, Any], Any, str]] = [
        ({"input": {}, "metadata": {"batchId": "not ok!"}}, None, "body.metadata.batchId"),
        ({"input": {}, "metadata": {"exampleName": " x"}}, None, "body.metadata.exampleName"),
        ({"input": {"doc": 1}}, {"doc": ("d.txt", b"x")}, "body.doc"),
        ({"input": {}}, {"a": ("same.txt", b"1"), "b": ("same.txt", b"2")}, "body.b"),
    ]
    for body, files, field in cases:
        with pytest.raises(ServiceValidationError) as refused:
            admin.agents.run(slug, body, files=files)
        assert issues(refused.value)[0][0] == field
    with pytest.raises(ServiceNotFoundError):
        admin.agents.run(f"missing-{unique}", {"input": {}})
    with pytest.raises(ServiceNotFoundError):
        admin.agents.executions.rerun(f"aex_missing{unique}")
    assert admin.agents.executions.list(slug).total == 0


def test_a_rerun_without_an_input_snapshot_is_a_conflict(
    admin: ServiceClient, unique: str, server: RunningServer
) -> None:
    slug = new_agent(admin, unique)
    stored = insert_execution(server, slug)

    def drop_input(session: Session) -> None:
        execution = session.get(Execution, stored.id)
        assert execution is not None
        execution.input = None

    server.server.database.write_sync(drop_input)

    with pytest.raises(ServiceError) as conflict:
        admin.agents.executions.rerun(stored.id)
    assert conflict.value.status == 409
    assert issues(conflict.value) == [
        ("path.executionId", "The execution has no stored input snapshot to rerun")
    ]


def _multipart_run(admin: ServiceClient, slug: str, json_text: str | None) -> dict[str, Any]:
    """A multipart run with one file part and ``json_text`` as ``_json``, waited for."""
    data = {} if json_text is None else {"_json": json_text}
    response = admin._http.post(
        f"/api/v1/agents/{slug}/run",
        params={"wait_for_completion": 30},
        data=data,
        files={"doc": ("doc.txt", b"abc", "text/plain")},
    )
    assert response.status_code == 202, response.text
    answer: dict[str, Any] = response.json()
    return answer


@pytest.mark.parametrize(
    ("json_text", "echoed", "metadata"),
    [
        # bare: the input object itself (what the eigenpal SDK sends)
        ('{"customer": "ACME", "n": 2}', {"customer": "ACME", "n": 2}, None),
        # wrapped: a RunAgentBody
        ('{"input": {"customer": "ACME"}, "metadata": {"t": 1}}', {"customer": "ACME"}, {"t": 1}),
        ('{"input": {"customer": "ACME"}}', {"customer": "ACME"}, None),
        ('{"metadata": null}', {}, None),
        # bare although it has an "input" key: another key, or a value that is not an object
        ('{"input": {"x": 1}, "other": 2}', {"input": {"x": 1}, "other": 2}, None),
        ('{"input": 5}', {"input": 5}, None),
        ("{}", {}, None),
        (None, {}, None),
    ],
)
def test_multipart_json_is_the_bare_input_or_a_run_body_by_its_keys(
    admin: ServiceClient,
    unique: str,
    json_text: str | None,
    echoed: dict[str, Any],
    metadata: dict[str, Any] | None,
) -> None:
    slug = new_agent(admin, unique)

    answer = _multipart_run(admin, slug, json_text)

    assert answer["status"] == "completed"
    assert answer["output"]["echo"] == {**echoed, "doc": {"$file": "input/doc.txt"}}
    execution = admin.agents.executions.get(answer["executionId"]).execution
    assert execution.metadata == metadata


def test_multipart_json_that_is_not_an_object_is_a_400(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    response = admin._http.post(
        f"/api/v1/agents/{slug}/run",
        data={"_json": "[1, 2]"},
        files={"doc": ("doc.txt", b"abc", "text/plain")},
    )
    assert response.status_code == 400
    assert [issue["field"] for issue in response.json()["issues"]] == ["body._json.input"]


def test_a_waited_run_reports_its_cost_and_an_unwaited_one_none(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)

    waited = admin._http.post(
        f"/api/v1/agents/{slug}/run", params={"wait_for_completion": 30}, json={"input": {}}
    ).json()
    execution = admin.agents.executions.get(waited["executionId"]).execution
    assert waited["status"] == "completed"
    assert waited["cost"] == {"durationMs": execution.duration_ms}
    assert isinstance(execution.duration_ms, int)

    unwaited = admin._http.post(f"/api/v1/agents/{slug}/run", json={"input": {}}).json()
    assert "cost" not in unwaited
    elapsed = admin._http.post(
        f"/api/v1/agents/{slug}/run",
        params={"wait_for_completion": 1},
        json={"input": {"sleep": 3}},
    ).json()
    assert elapsed["status"] == "timeout" and "cost" not in elapsed
    wait_for(admin, unwaited["executionId"])
    wait_for(admin, elapsed["executionId"])


def test_a_disabled_api_trigger_refuses_runs_and_reruns(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    first = admin.agents.run(slug, {"input": {}}, wait_for_completion=30)
    admin.agents.update(slug, {"config": {"triggers": {"api": {"enabled": False}}}})

    with pytest.raises(ServiceForbiddenError) as run:
        admin.agents.run(slug, {"input": {}})
    with pytest.raises(ServiceForbiddenError) as rerun:
        admin.agents.executions.rerun(first.execution_id)

    for refused in (run.value, rerun.value):
        assert refused.envelope["issues"][0]["message"] == (
            f"The API trigger of agent '{slug}' is disabled"
        )
    assert admin.agents.executions.list(slug).total == 1  # nothing was created
    admin.agents.update(slug, {"config": {"triggers": {"api": {"enabled": True}}}})
    assert admin.agents.run(slug, {"input": {}}, wait_for_completion=30).status.value == (
        "completed"
    )
