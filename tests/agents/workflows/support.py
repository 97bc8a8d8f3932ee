"""Helpers of the workflow tests: definitions from YAML, a real local HTTP server, an agent
invoker running real Python agents and a block invoker running nested workflows."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from handlers.agents.runner import CancelSignal, RunSpec, run
from handlers.agents.workflows import (
    AgentRequest,
    AgentResult,
    BlockRequest,
    BlockResult,
    MemoryJournal,
    WorkflowDefinition,
    WorkflowEngine,
    parse_workflow,
)
from tests.agents.runner.conftest import UNSANDBOXED


def workflow(text: str) -> WorkflowDefinition:
    return parse_workflow(textwrap.dedent(text))


async def poll_until(condition: object, seconds: float = 5.0) -> None:
    """Poll ``condition()`` until it is true, failing after ``seconds``."""
    assert callable(condition)
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


# -- a real HTTP server on loopback --------------------------------------------------------------


@dataclass
class LocalServer:
    url: str
    hits: Counter[str] = field(default_factory=Counter)
    """Requests per path."""


class _Handler(BaseHTTPRequestHandler):
    """GET/POST ``/echo`` answers the request as JSON; ``/flaky/<key>?fail=N`` answers 503 to
    its first N requests then 200; ``/slow?seconds=S`` answers after S seconds;
    ``/status/<code>`` answers that status; ``/text`` answers plain text."""

    server: _Server

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def do_PUT(self) -> None:
        self._answer()

    def _answer(self) -> None:
        parts = urlsplit(self.path)
        query = {name: values[0] for name, values in parse_qs(parts.query).items()}
        state = self.server.state
        state.hits[parts.path] += 1
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        if parts.path == "/echo":
            self._json(
                200,
                {
                    "method": self.command,
                    "query": query,
                    "headers": {name.lower(): value for name, value in self.headers.items()},
                    "json": json.loads(body) if body else None,
                },
            )
        elif parts.path.startswith("/flaky/"):
            failing = state.hits[parts.path] <= int(query.get("fail", "0"))
            self._json(503 if failing else 200, {"hit": state.hits[parts.path]})
        elif parts.path == "/slow":
            time.sleep(float(query.get("seconds", "1")))
            self._json(200, {"slow": True})
        elif parts.path.startswith("/status/"):
            self._json(int(parts.path.rsplit("/", 1)[1]), {"error": "as asked"})
        else:
            self._send(200, b"plain words", "text/plain; charset=utf-8")

    def _json(self, status: int, value: object) -> None:
        self._send(status, json.dumps(value).encode(), "application/json")

    def _send(self, status: int, content: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: LocalServer

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up (a cancelled or timed-out step) is expected


@contextmanager
def http_server() -> Iterator[LocalServer]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.state = LocalServer(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server.state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# -- agents and blocks ---------------------------------------------------------------------------

ECHO_AGENT = """
import json, os
with open(os.path.join(os.environ["AGENT_INPUT_DIR"], "input.json")) as f:
    data = json.load(f)
with open(os.path.join(os.environ["AGENT_OUTPUT_DIR"], "output.json"), "w") as f:
    json.dump({"greeting": "hello " + data["name"], "pid": os.getpid()}, f)
"""

SLEEPING_AGENT = """
import os, time
open(os.path.join(os.environ["READY_DIR"], "started"), "w").close()
time.sleep(30)
"""


class PythonAgents:
    """An AgentInvoker running real Python agents (slug -> main.py) with the real runner."""

    def __init__(self, programs: dict[str, str], work_root: Path, env: dict[str, str]) -> None:
        self.programs = programs
        self.work_root = work_root
        self.env = env
        self.requests: list[AgentRequest] = []

    async def run_agent(self, request: AgentRequest, cancel: CancelSignal) -> AgentResult:
        self.requests.append(request)
        spec = RunSpec(
            execution_id=f"{request.execution_id}-{request.step_id}-{request.attempt}",
            command=(sys.executable, "main.py"),
            workspace={"main.py": textwrap.dedent(self.programs[request.agent]).encode()},
            input_json=request.input,
            timeout_seconds=request.timeout_seconds or 20.0,
            env=self.env,
        )
        outcome = await run(spec, cancel, sandbox=UNSANDBOXED, work_root=self.work_root)
        return AgentResult(outcome.status, outcome.output_json, outcome.error, spec.execution_id)


class NestedBlocks:
    """A BlockInvoker running block definitions with the same engine, each with a journal."""

    def __init__(self, blocks: dict[str, WorkflowDefinition]) -> None:
        self.blocks = blocks
        self.engine: WorkflowEngine | None = None
        self.journals: list[MemoryJournal] = []

    async def run_block(self, request: BlockRequest, cancel: CancelSignal) -> BlockResult:
        assert self.engine is not None
        definition = self.blocks[request.block]
        journal = MemoryJournal()
        self.journals.append(journal)
        outcome = await self.engine.run(
            definition,
            request.input if isinstance(request.input, dict) else {},
            journal=journal,
            execution_id=f"{request.execution_id}.{request.step_id}",
            cancel=cancel,
            call_path=(*request.call_path, request.block),
        )
        return BlockResult(outcome.status, outcome.result, outcome.error)
