"""http steps against a real loopback server, block steps running nested workflows with the
same engine, and agent steps running real Python agents with the real runner."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from handlers.agents.egress import EgressPolicy
from handlers.agents.runner import CancelSignal
from handlers.agents.workflows import (
    HttpStepRunner,
    MemoryJournal,
    WorkflowEngine,
    standard_runners,
)
from tests.agents.workflows.support import (
    ECHO_AGENT,
    SLEEPING_AGENT,
    LocalServer,
    NestedBlocks,
    PythonAgents,
    http_server,
    poll_until,
    workflow,
)

LOOPBACK = EgressPolicy.parse(["127.0.0.1/32"])
"""The test server's address (http steps reach public addresses only by default)."""


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with http_server() as running:
        yield running


# -- http ----------------------------------------------------------------------------------------


async def test_an_http_step_sends_method_headers_query_and_json(server: LocalServer) -> None:
    definition = workflow(
        f"""\
        name: http
        inputs:
          token: string
        steps:
          - id: call
            type: http
            method: put
            url: {server.url}/echo?fixed=1
            headers:
              Authorization: "Bearer ${{{{ inputs.token }}}}"
              X-Count: ${{{{ 2 + 1 }}}}
            query: {{q: "${{{{ lower('A B') }}}}"}}
            json: {{list: [1, null], nested: {{ok: true}}}}
            expect_status: 200
          - id: text
            type: http
            url: {server.url}/text
          - id: missing
            type: http
            url: {server.url}/status/404
            expect_status: [404]
        """
    )
    async with httpx.AsyncClient() as client:
        engine = WorkflowEngine(standard_runners(http=HttpStepRunner(client, egress=LOOPBACK)))
        outcome = await engine.run(
            definition, {"token": "t0k"}, journal=MemoryJournal(), execution_id="h1"
        )

    assert outcome.status == "completed", outcome.error
    call = outcome.steps["call"].output
    assert isinstance(call, dict)
    assert call["status"] == 200
    assert call["headers"]["content-type"] == "application/json"
    echoed = call["body"]
    assert echoed["method"] == "PUT"
    assert echoed["query"] == {"fixed": "1", "q": "a b"}
    assert echoed["headers"]["authorization"] == "Bearer t0k"
    assert echoed["headers"]["x-count"] == "3"
    assert echoed["headers"]["content-type"] == "application/json"
    assert echoed["json"] == {"list": [1, None], "nested": {"ok": True}}
    assert outcome.steps["text"].output["body"] == "plain words"  # type: ignore[index]
    assert outcome.steps["missing"].output["status"] == 404  # type: ignore[index]


async def test_http_errors_are_clear_and_bad_requests_are_not_retried(server: LocalServer) -> None:
    definition = workflow(
        f"""\
        name: http-errors
        inputs:
          target: object
        steps:
          - id: not_a_string
            type: http
            url: ${{{{ inputs.target }}}}
            retries: 3
            allow_failure: true
          - id: refused
            type: http
            url: {server.url.replace("127.0.0.1", "127.0.0.2")}/echo
            retries: 3
            allow_failure: true
          - id: unreachable
            type: http
            url: http://127.0.0.1:9/nothing
            allow_failure: true
        """
    )

    runner = HttpStepRunner(egress=LOOPBACK)
    outcome = await WorkflowEngine({"http": runner}).run(
        definition, {"target": {"a": 1}}, journal=MemoryJournal(), execution_id="h2"
    )

    assert outcome.status == "completed"
    steps = outcome.steps
    assert steps["not_a_string"].error == "url must be a string"
    assert steps["not_a_string"].attempts == 1
    refused = server.url.replace("127.0.0.1", "127.0.0.2")
    assert steps["refused"].error == (
        f"url '{refused}/echo' refused: 127.0.0.2 is a loopback address"
    )
    assert steps["refused"].attempts == 1
    assert server.hits["/echo"] == 0
    assert (steps["unreachable"].error or "").startswith(
        "GET http://127.0.0.1:9/nothing failed: ConnectError"
    )


async def test_an_http_response_over_the_limit_fails(server: LocalServer) -> None:
    definition = workflow(
        f"""\
        name: big
        steps:
          - id: call
            type: http
            url: {server.url}/text
        """
    )
    runner = HttpStepRunner(max_response_bytes=5, egress=LOOPBACK)
    outcome = await WorkflowEngine({"http": runner}).run(
        definition, {}, journal=MemoryJournal(), execution_id="h3"
    )
    assert outcome.status == "failed"
    assert outcome.steps["call"].error == f"GET {server.url}/text: response larger than 5 bytes"


# -- blocks --------------------------------------------------------------------------------------


def block_engine(blocks: NestedBlocks) -> WorkflowEngine:
    engine = WorkflowEngine(standard_runners(blocks=blocks))
    blocks.engine = engine
    return engine


async def test_a_block_step_runs_a_nested_workflow_with_the_same_engine() -> None:
    double = workflow(
        """\
        name: double
        kind: block
        inputs:
          n: number
          label: {type: string, default: twice}
        steps:
          - id: compute
            type: transform
            value: ${{ inputs.n * 2 }}
        result:
          value: ${{ steps.compute.output }}
          label: ${{ inputs.label }}
        """
    )
    parent = workflow(
        """\
        name: parent
        inputs:
          n: number
        steps:
          - id: first
            type: block
            block: double
            input: {n: "${{ inputs.n }}"}
          - id: second
            type: block
            block: double
            version: 1.0.0
            input: {n: "${{ steps.first.output.value }}", label: again}
        result: ${{ steps.second.output }}
        """
    )
    blocks = NestedBlocks({"double": double})
    outcome = await block_engine(blocks).run(
        parent, {"n": 5}, journal=MemoryJournal(), execution_id="b1"
    )

    assert outcome.status == "completed", outcome.error
    assert outcome.steps["first"].output == {"value": 10, "label": "twice"}
    assert outcome.result == {"value": 20, "label": "again"}
    assert len(blocks.journals) == 2
    nested = blocks.journals[0]
    assert nested.workflow is not None and nested.workflow.status == "completed"
    assert nested.step_statuses("compute") == ["pending", "running", "completed"]


async def test_block_failures_and_recursion() -> None:
    ping = workflow(
        """\
        name: ping
        kind: block
        steps:
          - id: call
            type: block
            block: pong
        """
    )
    pong = workflow(
        """\
        name: pong
        kind: block
        steps:
          - id: call
            type: block
            block: ping
        """
    )
    broken = workflow(
        """\
        name: broken
        kind: block
        inputs:
          n: integer
        steps:
          - id: noop
            type: transform
            value: 1
        """
    )
    parent = workflow(
        """\
        name: parent
        steps:
          - id: loop
            type: block
            block: ping
            retries: {count: 2, backoff: 0}
            allow_failure: true
          - id: bad_input
            type: block
            block: broken
            input: {n: many}
            allow_failure: true
        """
    )
    blocks = NestedBlocks({"ping": ping, "pong": pong, "broken": broken})
    outcome = await block_engine(blocks).run(parent, {}, journal=MemoryJournal(), execution_id="b2")

    assert outcome.status == "completed"
    loop = outcome.steps["loop"]
    # ping -> pong -> ping is refused when ping would run again; the failure bubbles up.
    assert loop.error == (
        "step 'call' failed: step 'call' failed: block recursion: parent -> ping -> pong -> ping"
    )
    assert loop.attempts == 3  # the nested failures are ordinary (retryable) failures
    assert outcome.steps["bad_input"].error == ("invalid input: n: expected an integer, got string")


async def test_cancelling_a_parent_cancels_its_running_block() -> None:
    sleepy = workflow(
        """\
        name: sleepy
        kind: block
        steps:
          - id: nap
            type: wait
            duration: 30s
        """
    )
    parent = workflow(
        """\
        name: parent
        steps:
          - id: nested
            type: block
            block: sleepy
        """
    )
    blocks = NestedBlocks({"sleepy": sleepy})
    cancel = CancelSignal()
    journal = MemoryJournal()
    run = asyncio.create_task(
        block_engine(blocks).run(parent, {}, journal=journal, execution_id="b3", cancel=cancel)
    )
    await poll_until(lambda: bool(blocks.journals) and "nap" in blocks.journals[0].steps)
    await poll_until(lambda: blocks.journals[0].steps["nap"].status == "waiting")
    cancel.request()
    outcome = await asyncio.wait_for(run, timeout=2)

    assert outcome.status == "cancelled"
    assert outcome.steps["nested"].status == "cancelled"
    nested = blocks.journals[0]
    assert nested.workflow is not None and nested.workflow.status == "cancelled"


# -- agents --------------------------------------------------------------------------------------


@pytest.fixture
def runs_dir(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "runs"
    root.mkdir()
    yield root
    assert list(root.iterdir()) == [], "an agent's run directory was left behind"


async def test_an_agent_step_runs_a_real_agent(runs_dir: Path) -> None:
    definition = workflow(
        """\
        name: greet
        inputs:
          who: string
        steps:
          - id: hello
            type: agent
            agent: greeter
            input: {name: "${{ upper(inputs.who) }}"}
            timeout: 20s
          - id: broken
            type: agent
            agent: crasher
            allow_failure: true
        result: ${{ steps.hello.output.greeting }}
        """
    )
    agents = PythonAgents(
        {"greeter": ECHO_AGENT, "crasher": "import sys; sys.exit('no luck')"}, runs_dir, {}
    )
    engine = WorkflowEngine(standard_runners(agents=agents))
    outcome = await engine.run(
        definition, {"who": "ada"}, journal=MemoryJournal(), execution_id="a1"
    )

    assert outcome.status == "completed", outcome.error
    assert outcome.result == "hello ADA"
    assert outcome.steps["hello"].input == {"name": "ADA"}
    assert outcome.steps["broken"].error == "exit code 1: no luck"
    request = next(r for r in agents.requests if r.agent == "greeter")
    assert (request.execution_id, request.step_id, request.attempt) == ("a1", "hello", 1)
    assert request.timeout_seconds == 20


async def test_cancelling_a_workflow_stops_its_running_agent(
    runs_dir: Path, tmp_path: Path
) -> None:
    definition = workflow(
        """\
        name: long
        steps:
          - id: think
            type: agent
            agent: sleeper
          - id: after
            type: transform
            value: never
            needs: think
        """
    )
    ready = tmp_path / "ready"
    ready.mkdir()
    agents = PythonAgents({"sleeper": SLEEPING_AGENT}, runs_dir, {"READY_DIR": str(ready)})
    cancel = CancelSignal()
    run = asyncio.create_task(
        WorkflowEngine(standard_runners(agents=agents)).run(
            definition, {}, journal=MemoryJournal(), execution_id="a2", cancel=cancel
        )
    )
    await poll_until(lambda: (ready / "started").exists(), seconds=10)
    started = time.monotonic()
    cancel.request()
    outcome = await asyncio.wait_for(run, timeout=5)

    assert time.monotonic() - started < 3
    assert outcome.status == "cancelled"
    assert outcome.steps["think"].status == "cancelled"
    assert outcome.steps["after"].status == "cancelled"


async def test_a_step_without_a_runner_fails_clearly() -> None:
    definition = workflow(
        """\
        name: no-agents
        steps:
          - id: hello
            type: agent
            agent: greeter
        """
    )
    outcome = await WorkflowEngine({}).run(
        definition, {}, journal=MemoryJournal(), execution_id="a3"
    )
    assert outcome.status == "failed"
    assert outcome.error == "step 'hello' failed: no runner for agent steps"


async def test_an_error_answer_too_large_to_quote_still_fails_clearly() -> None:
    body = json.dumps(["x" * 10] * 200_000).encode()  # 2.6 MB: over the 1M characters of text

    class Failing(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(500)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/big"
    definition = workflow(
        f"name: big-error\nsteps:\n  - id: call\n    type: http\n    url: {url}\n"
    )
    try:
        outcome = await WorkflowEngine({"http": HttpStepRunner(egress=LOOPBACK)}).run(
            definition, {}, journal=MemoryJournal(), execution_id="h-big"
        )
    finally:
        server.shutdown()
        server.server_close()

    assert (
        outcome.steps["call"].error == f"GET {url} answered 500: (a JSON body too large to quote)"
    )
