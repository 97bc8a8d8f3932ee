"""``sdk.agents.run``: JSON inputs with and without a wait, an elapsed wait, multipart file
inputs (the SDK's own encoding), the run's cost, and a disabled API trigger."""

from __future__ import annotations

from pathlib import Path

import pytest
from eigenpal import EigenpalClient, EigenpalForbiddenError
from eigenpal._generated.models.run_agent_response import RunAgentResponse
from eigenpal._generated.models.run_agent_response_cost import RunAgentResponseCost

from tests.agents.real_sdk.sdk_support import (
    PDF,
    Leftovers,
    absent,
    new_agent,
    value_of,
    wait_for_execution,
)


def test_a_json_input_completes_within_the_wait(sdk: EigenpalClient, worker_agent: str) -> None:
    answer = sdk.agents.run(worker_agent, {"customer": "ACME", "n": 1}, wait_for_completion=30)

    assert isinstance(answer, RunAgentResponse)  # parsed: the server answered 202
    assert answer.execution_id.startswith("aex_")
    assert value_of(answer.status) == "completed"
    assert answer.output == {"echo": {"customer": "ACME", "n": 1}, "files": {}}
    assert answer.error is None and answer.schema_valid is None


def test_without_a_wait_the_run_answers_at_once_and_completes_later(
    sdk: EigenpalClient, worker_agent: str
) -> None:
    answer = sdk.agents.run(worker_agent, {"n": 2})

    assert value_of(answer.status) in ("created", "pending")
    assert answer.output is None or absent(answer.output)
    execution = wait_for_execution(sdk, answer.execution_id)
    assert execution.status.value == "completed"
    assert execution.output == {"echo": {"n": 2}, "files": {}}


def test_a_finished_sync_run_reports_its_cost(sdk: EigenpalClient, worker_agent: str) -> None:
    finished = sdk.agents.run(worker_agent, {"n": 3}, wait_for_completion=30)
    queued = sdk.agents.run(worker_agent, {"n": 4})

    assert isinstance(finished.cost, RunAgentResponseCost)
    duration = finished.cost.additional_properties["durationMs"]
    assert isinstance(duration, int) and duration >= 0
    assert absent(queued.cost)


def test_an_elapsed_wait_answers_timeout_and_the_execution_goes_on(
    sdk: EigenpalClient, worker_agent: str, leftovers: Leftovers
) -> None:
    answer = sdk.agents.run(worker_agent, {"sleep": 5}, wait_for_completion=1)
    leftovers.agent_executions.append(answer.execution_id)

    assert answer.status == "timeout"
    assert answer.output is None or absent(answer.output)
    assert wait_for_execution(sdk, answer.execution_id).status.value == "completed"


def test_a_file_input_and_scalars_travel_as_multipart(
    sdk: EigenpalClient, worker_agent: str
) -> None:
    invoice = {"content": PDF, "filename": "invoice.pdf", "mime_type": "application/pdf"}

    answer = sdk.agents.run(
        worker_agent, {"customer": "ACME", "amount": 12, "invoice": invoice}, wait_for_completion=30
    )

    assert value_of(answer.status) == "completed", answer.error
    assert answer.output == {
        "echo": {"customer": "ACME", "amount": 12, "invoice": {"$file": "input/invoice.pdf"}},
        "files": {"invoice.pdf": len(PDF)},
    }
    assert sdk.agents.executions.download_file(answer.execution_id, "input", "invoice.pdf") == PDF


def test_a_run_with_only_file_inputs(
    sdk: EigenpalClient, worker_agent: str, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"pay within 30 days\n")
    scan = tmp_path / "scan.png"
    scan.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))

    with scan.open("rb") as handle:
        answer = sdk.agents.run(worker_agent, {"notes": notes, "scan": handle},
                                wait_for_completion=30)  # fmt: skip

    assert value_of(answer.status) == "completed", answer.error
    assert answer.output == {
        "echo": {"notes": {"$file": "input/notes.txt"}, "scan": {"$file": "input/scan.png"}},
        "files": {"notes.txt": 19, "scan.png": 72},
    }


def test_a_disabled_api_trigger_refuses_runs_with_403(sdk: EigenpalClient, unique: str) -> None:
    slug = new_agent(
        sdk,
        unique,
        config={"entrypoint": ["python", "main.py"], "triggers": {"api": {"enabled": False}}},
    )

    with pytest.raises(EigenpalForbiddenError) as refused:
        sdk.agents.run(slug, {"customer": "ACME"}, wait_for_completion=30)
    with pytest.raises(EigenpalForbiddenError):
        sdk.agents.run(slug, {"doc": {"content": b"x", "filename": "x.txt"}})

    assert refused.value.status == 403
    assert "disabled" in str(refused.value)
    assert isinstance(refused.value.request_id, str)
    assert refused.value.request_id.startswith("req_")
    assert sdk.agents.executions.list(slug).total == 0
