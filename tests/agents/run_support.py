"""Test support of the run, execution and worker tests: small real agents, waiting, servers."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from generated.agents import models
from generated.agents.client import ServiceClient
from handlers.agents.storage.schema import Execution, WorkflowExecution
from tests.agents.support import RunningServer, Storage, running

ROOT = Path(__file__).resolve().parents[2]

TERMINAL = {"completed", "failed", "cancelled", "rejected"}

# An agent following the runner's contract: it reads $AGENT_INPUT_DIR/input.json and writes
# output.json, an output file, issues.md and trace.jsonl; "sleep" makes it run that long and
# "fail" makes it exit 3 after a line on stderr.
WORKER_AGENT = """\
import json, os, pathlib, sys, time
source = pathlib.Path(os.environ["AGENT_INPUT_DIR"])
out = pathlib.Path(os.environ["AGENT_OUTPUT_DIR"])
data = json.loads((source / "input.json").read_text())
deadline = time.monotonic() + float(data.get("sleep", 0))
while time.monotonic() < deadline:
    time.sleep(0.05)
if data.get("fail"):
    print("the agent gave up: " + str(data["fail"]), file=sys.stderr)
    sys.exit(3)
files = sorted(p.name for p in (source / "files").iterdir()) if (source / "files").is_dir() else []
sizes = {name: (source / "files" / name).stat().st_size for name in files}
(out / "output.json").write_text(json.dumps({"echo": data, "files": sizes}))
(out / "tables").mkdir()
(out / "tables" / "lines.csv").write_text("item,amount\\nwidget,1200\\n")
(out / "issues.md").write_text("# Issues\\n- none\\n")
(out / "trace.jsonl").write_text(json.dumps({"step": "done"}) + "\\n")
"""


def new_agent(
    client: ServiceClient,
    unique: str,
    *,
    config: dict[str, Any] | None = None,
    program: str | None = WORKER_AGENT,
) -> str:
    """A new agent's slug; its ``main.py`` is ``program`` (None: the starter) under ``config``."""
    slug = f"run-{unique}-{secrets.token_hex(3)}"
    client.agents.create({"name": slug, "slug": slug, "config": config})
    if program is not None:
        client.agents.put_file(slug, {"content": program}, path="main.py")
    return slug


def wait_for(
    client: ServiceClient,
    execution_id: str,
    statuses: Iterable[str] = TERMINAL,
    timeout: float = 30.0,
    include: list[Any] | None = None,
) -> models.AgentExecutionSummary:
    """The execution once its status is one of ``statuses`` (fails after ``timeout``)."""
    wanted = set(statuses)
    deadline = time.monotonic() + timeout
    while True:
        execution = client.agents.executions.get(execution_id, include=include).execution
        if execution.status.value in wanted:
            return execution
        assert time.monotonic() < deadline, f"{execution_id} stayed {execution.status}"
        time.sleep(0.05)


def download(client: ServiceClient, execution_id: str, kind: str, name: str) -> bytes:
    """The bytes of one file of an execution."""
    return b"".join(client.agents.executions.download_file(execution_id, kind, name))


def issues(error: Any) -> list[tuple[str, str]]:
    """The (field, message) pairs of a ServiceError's envelope."""
    return [(issue["field"], issue["message"]) for issue in error.envelope["issues"]]


@dataclass
class TunedStorage(Storage):
    """Storage whose server settings differ from the defaults by ``overrides``."""

    overrides: dict[str, Any] = field(default_factory=dict)

    def settings(self) -> Any:
        return super().settings().model_copy(update=self.overrides)


@contextmanager
def tuned_server(storage: Storage, **overrides: Any) -> Iterator[RunningServer]:
    """A server on ``storage`` with some settings changed."""
    tuned = TunedStorage(storage.data_dir, storage.database_url, overrides)
    with running(tuned) as server:
        yield server


def _start_worker(
    storage: Storage, tmp_path: Path, index: int, extra_env: dict[str, str]
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "AGENTS_DATABASE_URL": storage.database_url,
        "AGENTS_DATA_DIR": str(storage.data_dir),
        "AGENTS_WORKER_CONCURRENCY": "1",
        "AGENTS_HEARTBEAT_SECONDS": "0.3",
        "AGENTS_STALE_AFTER_SECONDS": "1.5",
        "AGENTS_CANCEL_POLL_SECONDS": "0.2",
        "AGENTS_MAX_ATTEMPTS": "2",
        "LOG_LEVEL": "WARNING",
        **extra_env,
    }
    with (tmp_path / f"worker-{index}.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "handlers.agents.worker"], env=env, cwd=ROOT, stdout=log,
            stderr=log,
        )  # fmt: skip


@contextmanager
def worker_processes(
    storage: Storage, tmp_path: Path, count: int, env: dict[str, str] | None = None
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` ``agents-worker`` processes on ``storage`` (fast heartbeats, one execution
    each, logs in ``tmp_path``, ``env`` added to their environment); stopped with SIGTERM
    (SIGKILL after 20 s) at the end."""
    workers: list[subprocess.Popen[bytes]] = []
    try:
        for index in range(count):
            workers.append(_start_worker(storage, tmp_path, index, env or {}))
        yield workers
    finally:
        _stop(workers)


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class ServerProcess:
    """An ``agents-server`` process: its URL and the process."""

    url: str
    process: subprocess.Popen[bytes]

    def client(self, api_key: str) -> ServiceClient:
        return ServiceClient(api_key=api_key, base_url=self.url, timeout_seconds=30.0)


@contextmanager
def server_process(
    storage: Storage, log_path: Path, env: dict[str, str] | None = None
) -> Iterator[ServerProcess]:
    """``agents-server`` as a process of its own on ``storage`` (any free port, log in
    ``log_path``, ``env`` added to its environment); stopped with SIGTERM at the end."""
    full_env = {
        **os.environ,
        "AGENTS_PORT": "0",
        "AGENTS_DATABASE_URL": storage.database_url,
        "AGENTS_DATA_DIR": str(storage.data_dir),
        "AGENTS_HEARTBEAT_SECONDS": "0.3",
        "AGENTS_STALE_AFTER_SECONDS": "1.5",
        "AGENTS_CANCEL_POLL_SECONDS": "0.2",
        "LOG_LEVEL": "INFO",
        **(env or {}),
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "handlers.agents.server"], env=full_env, cwd=ROOT,
            stdout=log, stderr=log,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while (url := _announced_url(log_path)) is None:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"agents-server did not start:\n{log_path.read_text()}")
            time.sleep(0.05)
        yield ServerProcess(url, process)
    finally:
        _stop([process])


def _announced_url(log_path: Path) -> str | None:
    for line in log_path.read_text(errors="replace").splitlines():
        if "agents-server listening on " in line:
            return line.split("listening on ", 1)[1].split()[0]
    return None


def holder(
    server: RunningServer, table: type[Execution] | type[WorkflowExecution], execution_id: str
) -> str | None:
    """The worker id holding the execution's lease (``None`` when none does)."""

    def read(session: Session) -> str | None:
        row = session.get(table, execution_id)
        return None if row is None else row.worker_id

    return server.server.database.read_sync(read)


def kill_holder(
    server: RunningServer,
    table: type[Execution] | type[WorkflowExecution],
    execution_id: str,
    workers: list[subprocess.Popen[bytes]],
) -> str:
    """SIGKILL the worker process (one of ``workers``) holding the execution; its worker id."""
    worker_id = holder(server, table, execution_id)
    assert worker_id is not None
    pid = int(worker_id.rsplit(":", 1)[1])
    assert pid in [worker.pid for worker in workers]
    os.kill(pid, signal.SIGKILL)
    return worker_id
