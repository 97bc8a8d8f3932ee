"""``Idempotency-Key`` on the creating operations (run, rerun, create agent, create and run
workflow), on SQLite and PostgreSQL: a repeat gets the first answer (status and body, with
``Idempotent-Replayed: true``) and creates nothing, also when ten repeats arrive at once; the
same key with another request is a 409; keys are per API key; a failed request is not kept."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from generated.agents.client import ServiceClient, ServiceConflictError
from tests.agents.queue_support import REPLAYED, config, poll, raw_client
from tests.agents.run_support import new_agent, wait_for
from tests.agents.support import RunningServer

CUSTOMER_SCHEMA = {
    "type": "object",
    "required": ["customer"],
    "properties": {"customer": {"type": "string"}},
}


def _count(client: ServiceClient, agent: str) -> int:
    return client.agents.executions.list(agent).total


def _assert_replay(first: httpx.Response, again: httpx.Response) -> None:
    """``again`` is ``first`` replayed: the same status and body, marked as a replay."""
    assert first.headers.get(REPLAYED) is None
    assert again.headers.get(REPLAYED) == "true"
    assert again.status_code == first.status_code
    assert again.json() == first.json()


def _assert_conflict(error: ServiceConflictError) -> None:
    assert error.status == 409
    fields = [issue["field"] for issue in error.envelope["issues"]]
    assert fields == ["header.Idempotency-Key"], error.envelope
    assert isinstance(error.envelope.get("requestId"), str)


def test_a_repeated_run_gets_the_first_answer_and_creates_nothing(
    server: RunningServer, admin_key: str, admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    path = f"/api/v1/agents/{slug}/run"
    headers = {"Idempotency-Key": f"run-{unique}"}

    with raw_client(server, admin_key) as http:
        first = http.post(path, json={"input": {"n": 1}}, headers=headers, params={"priority": 3})
        wait_for(admin, first.json()["executionId"])  # the repeat comes after the execution ended
        again = http.post(path, json={"input": {"n": 1}}, headers=headers, params={"priority": 3})

    assert first.status_code == 202, first.text
    _assert_replay(first, again)
    assert again.content == first.content
    assert _count(admin, slug) == 1
    # the generated client passes the key through its method parameter
    answer = admin.agents.run(
        slug, {"input": {"n": 1}}, idempotency_key=f"run-{unique}", priority=3
    )
    assert answer.execution_id == first.json()["executionId"]
    assert _count(admin, slug) == 1
    # without a key every request acts
    admin.agents.run(slug, {"input": {"n": 1}}, priority=3)
    assert _count(admin, slug) == 2


def test_concurrent_repeats_create_one_execution(
    server: RunningServer, admin_key: str, admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    repeats = 10
    start = threading.Barrier(repeats)
    answers: list[httpx.Response | BaseException] = [ValueError("not sent")] * repeats

    def send(index: int) -> None:
        with raw_client(server, admin_key) as http:
            start.wait(timeout=30)
            try:
                answers[index] = http.post(
                    f"/api/v1/agents/{slug}/run",
                    json={"input": {"order": 42}},
                    headers={"Idempotency-Key": f"burst-{unique}"},
                )
            except httpx.HTTPError as error:
                answers[index] = error

    threads = [threading.Thread(target=send, args=(index,)) for index in range(repeats)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    responses = [answer for answer in answers if isinstance(answer, httpx.Response)]
    assert len(responses) == repeats, answers
    assert [response.status_code for response in responses] == [202] * repeats, [
        response.text for response in responses
    ]
    assert len({response.json()["executionId"] for response in responses}) == 1
    assert len({response.content for response in responses}) == 1
    replayed = [response.headers.get(REPLAYED) for response in responses]
    assert (replayed.count(None), replayed.count("true")) == (1, repeats - 1), replayed
    assert _count(admin, slug) == 1
    assert wait_for(admin, responses[0].json()["executionId"]).status.value == "completed"


def test_a_repeat_sent_while_the_first_is_answered_waits_for_its_answer(
    server: RunningServer, admin_key: str, admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    path = f"/api/v1/agents/{slug}/run"
    request: dict[str, Any] = {
        "json": {"input": {"sleep": 1.5}},
        "params": {"wait_for_completion": 30},
        "headers": {"Idempotency-Key": f"slow-{unique}"},
    }
    answers: dict[str, httpx.Response] = {}

    def first() -> None:
        with raw_client(server, admin_key) as http:
            answers["first"] = http.post(path, **request)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        running = poll(
            lambda: admin.agents.executions.list(slug).executions,
            lambda found: bool(found) and found[0].status.value == "running",
            timeout=30,
            what="the first request's execution",
        )
        with raw_client(server, admin_key) as http:
            answers["repeat"] = http.post(path, **request)  # while the first is still waiting
    finally:
        thread.join(timeout=60)

    assert answers["first"].status_code == 202, answers["first"].text
    assert answers["first"].json()["status"] == "completed"
    assert answers["first"].json()["executionId"] == running[0].id
    _assert_replay(answers["first"], answers["repeat"])
    assert _count(admin, slug) == 1


def test_the_same_key_with_another_request_is_a_409(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    other = new_agent(admin, unique)
    key = f"once-{unique}"
    first = admin.agents.run(slug, {"input": {"n": 1}}, idempotency_key=key)

    variants: list[tuple[str, Any]] = [
        ("another body", lambda: admin.agents.run(slug, {"input": {"n": 2}}, idempotency_key=key)),
        ("another priority", lambda: admin.agents.run(slug, {"input": {"n": 1}},
                                                       idempotency_key=key, priority=5)),
        ("another agent", lambda: admin.agents.run(other, {"input": {"n": 1}},
                                                    idempotency_key=key)),
        ("another operation", lambda: admin.agents.create({"name": f"x-{unique}",
                                                            "slug": f"x-{unique}"},
                                                           idempotency_key=key)),
    ]  # fmt: skip
    for what, call in variants:
        with pytest.raises(ServiceConflictError) as conflict:
            call()
        _assert_conflict(conflict.value)
        assert "different request" in conflict.value.envelope["issues"][0]["message"], what

    assert _count(admin, slug) == 1 and _count(admin, other) == 0
    assert admin.agents.list(search=f"x-{unique}").total == 0
    again = admin.agents.run(slug, {"input": {"n": 1}}, idempotency_key=key)
    assert again.execution_id == first.execution_id


def test_keys_are_scoped_to_the_api_key(
    server: RunningServer, admin_key: str, admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    other_key = server.key("other", scope_all=True)
    path = f"/api/v1/agents/{slug}/run"
    headers = {"Idempotency-Key": f"shared-{unique}"}

    with raw_client(server, admin_key) as mine, raw_client(server, other_key) as theirs:
        first = mine.post(path, json={"input": {"n": 1}}, headers=headers)
        own = theirs.post(path, json={"input": {"n": 1}}, headers=headers)
        own_again = theirs.post(path, json={"input": {"n": 1}}, headers=headers)
        mine_again = mine.post(path, json={"input": {"n": 1}}, headers=headers)
        # nor is another request under a key the other API key used a conflict
        reused = {"Idempotency-Key": f"reused-{unique}"}
        mine_reused = mine.post(path, json={"input": {"n": 2}}, headers=reused)
        theirs_reused = theirs.post(path, json={"input": {"n": 9}}, headers=reused)

    assert (first.status_code, own.status_code) == (202, 202)
    assert own.headers.get(REPLAYED) is None
    assert own.json()["executionId"] != first.json()["executionId"]
    _assert_replay(own, own_again)
    _assert_replay(first, mine_again)
    assert (mine_reused.status_code, theirs_reused.status_code) == (202, 202)
    assert theirs_reused.headers.get(REPLAYED) is None
    assert mine_reused.json()["executionId"] != theirs_reused.json()["executionId"]
    assert _count(admin, slug) == 4


def test_a_failed_request_is_not_kept_and_may_be_sent_again_with_its_key(
    server: RunningServer, admin_key: str, admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique, config=config(inputSchema=CUSTOMER_SCHEMA))
    path = f"/api/v1/agents/{slug}/run"
    headers = {"Idempotency-Key": f"retry-{unique}"}

    with raw_client(server, admin_key) as http:
        refused = http.post(path, json={"input": {"customer": 7}}, headers=headers)
        refused_again = http.post(path, json={"input": {"customer": 7}}, headers=headers)
        accepted = http.post(path, json={"input": {"customer": "acme"}}, headers=headers)
        replayed = http.post(path, json={"input": {"customer": "acme"}}, headers=headers)
        stale = http.post(path, json={"input": {"customer": 7}}, headers=headers)

    assert refused.status_code == 400, refused.text
    assert [issue["field"] for issue in refused.json()["issues"]] == ["body.input.customer"]
    assert refused_again.status_code == 400 and refused_again.headers.get(REPLAYED) is None
    assert accepted.status_code == 202, accepted.text
    assert accepted.headers.get(REPLAYED) is None
    _assert_replay(accepted, replayed)
    assert stale.status_code == 409  # the key now belongs to the accepted request
    assert [issue["field"] for issue in stale.json()["issues"]] == ["header.Idempotency-Key"]
    assert _count(admin, slug) == 1


def test_a_malformed_key_is_a_400(
    server: RunningServer, admin_key: str, admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    with raw_client(server, admin_key) as http:
        for key in ("has space", "k" * 256):
            answer = http.post(
                f"/api/v1/agents/{slug}/run", json={"input": {}}, headers={"Idempotency-Key": key}
            )
            assert answer.status_code == 400, answer.text
            fields = [issue["field"] for issue in answer.json()["issues"]]
            assert fields == ["header.Idempotency-Key"]
    assert _count(admin, slug) == 0


def test_creating_an_agent_with_a_key(
    server: RunningServer, admin_key: str, admin: ServiceClient, unique: str
) -> None:
    body = {"name": f"Keyed {unique}", "slug": f"keyed-{unique}"}
    headers = {"Idempotency-Key": f"agent-{unique}"}

    with raw_client(server, admin_key) as http:
        first = http.post("/api/v1/agents", json=body, headers=headers)
        again = http.post("/api/v1/agents", json=body, headers=headers)
        unkeyed = http.post("/api/v1/agents", json=body)

    assert first.status_code == 201, first.text
    _assert_replay(first, again)
    assert unkeyed.status_code == 409  # without the key the second create is refused as usual
    assert admin.agents.list(search=f"keyed-{unique}").total == 1
    created = admin.agents.create(body, idempotency_key=f"agent-{unique}")
    assert created.agent.id == first.json()["agent"]["id"]


def test_creating_and_running_a_workflow_with_a_key(
    server: RunningServer, admin_key: str, admin: ServiceClient, unique: str
) -> None:
    slug = f"keyed-flow-{unique}"
    yaml = (
        f"name: {slug}\ninputs:\n  n:\n    type: integer\nsteps:\n  - id: only\n"
        "    type: transform\n    value: ${{ inputs.n }}\nresult: ${{ steps.only.output }}\n"
    )
    with raw_client(server, admin_key) as http:
        created = http.post(
            "/api/v1/workflows", json={"yamlContent": yaml}, headers={"Idempotency-Key": slug}
        )
        created_again = http.post(
            "/api/v1/workflows", json={"yamlContent": yaml}, headers={"Idempotency-Key": slug}
        )
        run_headers = {"Idempotency-Key": f"run-{slug}"}
        ran = http.post(f"/api/v1/workflows/{slug}/run", json={"input": {"n": 4}},
                        headers=run_headers)  # fmt: skip
        ran_again = http.post(f"/api/v1/workflows/{slug}/run", json={"input": {"n": 4}},
                              headers=run_headers)  # fmt: skip
        ran_otherwise = http.post(f"/api/v1/workflows/{slug}/run", json={"input": {"n": 5}},
                                  headers=run_headers)  # fmt: skip

    assert created.status_code == 201, created.text
    _assert_replay(created, created_again)
    assert admin.workflows.versions(slug).total == 1
    assert ran.status_code == 201, ran.text
    _assert_replay(ran, ran_again)
    assert ran_otherwise.status_code == 409
    assert admin.workflows.executions.list(slug).total == 1
    again = admin.workflows.run(slug, {"input": {"n": 4}}, idempotency_key=f"run-{slug}")
    assert again.execution_id == ran.json()["executionId"]
    with pytest.raises(ServiceConflictError) as conflict:
        admin.workflows.create({"yamlContent": yaml.replace("integer", "number")},
                               idempotency_key=slug)  # fmt: skip
    _assert_conflict(conflict.value)


def test_a_rerun_with_a_key(
    server: RunningServer, admin_key: str, admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    source = admin.agents.run(slug, {"input": {"n": 2}})
    wait_for(admin, source.execution_id)
    key = f"rerun-{unique}"

    rerun = admin.agents.executions.rerun(source.execution_id, idempotency_key=key)
    with raw_client(server, admin_key) as http:
        again = http.post(
            f"/api/v1/agents/executions/{source.execution_id}/rerun",
            headers={"Idempotency-Key": key},
        )
    repeated = admin.agents.executions.rerun(source.execution_id, idempotency_key=key)

    assert again.status_code == 202 and again.headers.get(REPLAYED) == "true"
    assert again.json()["executionId"] == rerun.execution_id == repeated.execution_id
    assert again.json()["sourceExecutionId"] == source.execution_id
    assert _count(admin, slug) == 2
    with pytest.raises(ServiceConflictError) as conflict:
        admin.agents.executions.rerun(source.execution_id, idempotency_key=key, priority=9)
    _assert_conflict(conflict.value)
    assert _count(admin, slug) == 2
    assert wait_for(admin, rerun.execution_id).status.value == "completed"


def test_a_multipart_run_with_a_key(
    server: RunningServer, admin_key: str, admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    key = f"upload-{unique}"

    first = admin.agents.run(
        slug,
        {"input": {"n": 1}},
        files={"doc": ("report.txt", b"hello world", "text/plain")},
        idempotency_key=key,
    )
    with raw_client(server, admin_key) as http:
        same = http.post(
            f"/api/v1/agents/{slug}/run",
            data={"_json": json.dumps({"input": {"n": 1}})},
            files={"doc": ("report.txt", b"hello world", "text/plain")},
            headers={"Idempotency-Key": key},
        )
        changed = http.post(
            f"/api/v1/agents/{slug}/run",
            data={"_json": json.dumps({"input": {"n": 1}})},
            files={"doc": ("report.txt", b"hello there", "text/plain")},
            headers={"Idempotency-Key": key},
        )

    assert same.status_code == 202 and same.headers.get(REPLAYED) == "true", same.text
    assert same.json()["executionId"] == first.execution_id
    assert changed.status_code == 409, changed.text
    assert [issue["field"] for issue in changed.json()["issues"]] == ["header.Idempotency-Key"]
    assert _count(admin, slug) == 1
    ended = wait_for(admin, first.execution_id)
    assert ended.output == {"echo": {"n": 1, "doc": {"$file": "input/report.txt"}},
                            "files": {"report.txt": 11}}  # fmt: skip
