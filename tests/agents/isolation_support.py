"""Support of the isolation tests: real deployments with a canary secret, tenants, probes.

A deployment is ``agents-server`` as a process of its own (so its ``/proc/<pid>/environ``
really holds the canary), on SQLite or PostgreSQL, running programs itself or through
``agents-worker`` processes.
"""

from __future__ import annotations

import secrets
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from generated.agents.client import ServiceClient
from handlers.agents.domain.keys import create_key
from handlers.agents.runner.process_group import living_processes
from handlers.agents.storage.database import Database
from tests.agents.run_support import ServerProcess, server_process, worker_processes
from tests.agents.support import Storage

CANARY = f"canary-{secrets.token_hex(8)}"
"""A secret in the environment of every server and worker process of these tests."""

DEPLOYMENT_ENV = {
    "AGENTS_TEST_CANARY_SECRET": CANARY,
    "AGENTS_RUN_MAX_CPU_SECONDS": "2",
    "AGENTS_WORKER_CONCURRENCY": "3",
}

DEPLOYMENTS = ["sqlite", "postgresql", "postgresql-worker"]
"""The server running programs itself on SQLite and on PostgreSQL, and ``agents-worker``
processes (two) running them for a server on PostgreSQL."""


@dataclass
class Deployment:
    kind: str
    storage: Storage
    server: ServerProcess
    workers: list[subprocess.Popen[bytes]]
    admin_key: str

    @property
    def program_runners(self) -> list[int]:
        """Pids of the processes that start agent programs (the server, or the workers)."""
        if self.workers:
            return [worker.pid for worker in self.workers]
        return [self.server.process.pid]

    def client(self, key: str | None = None) -> ServiceClient:
        return self.server.client(key or self.admin_key)

    def key(self, **scope: Any) -> str:
        database = Database(self.storage.database_url)
        try:
            return database.write_sync(partial(create_key, name="test", **scope)).secret
        finally:
            database.dispose()


@contextmanager
def deployed(
    kind: str, storage: Storage, logs: Path, env: dict[str, str] | None = None
) -> Iterator[Deployment]:
    """A deployment of ``kind`` (one of :data:`DEPLOYMENTS`) on ``storage``."""
    full_env = {**DEPLOYMENT_ENV, **(env or {})}
    server_env = dict(full_env)
    if kind == "postgresql-worker":
        server_env["AGENTS_EMBEDDED_WORKER"] = "false"
    with server_process(storage, logs / f"{kind}-server.log", server_env) as server:
        admin = _admin_key(storage)
        if kind != "postgresql-worker":
            yield Deployment(kind, storage, server, [], admin)
            return
        with worker_processes(storage, logs, 2, full_env) as workers:
            yield Deployment(kind, storage, server, workers, admin)


def _admin_key(storage: Storage) -> str:
    database = Database(storage.database_url)
    try:
        issued = database.write_sync(
            partial(create_key, name="admin", scope_all=True, can_create_agents=True)
        )
    finally:
        database.dispose()
    return issued.secret


@dataclass
class Tenant:
    """A key scoped to one agent, without the right to create agents, and that agent."""

    client: ServiceClient
    agent: str


def tenant_agent(
    deployment: Deployment, program: str, config: dict[str, Any] | None = None
) -> Tenant:
    """An agent made by the operator, whose ``main.py`` its tenant uploads."""
    slug = f"tenant-{secrets.token_hex(4)}"
    with deployment.client() as admin:
        agent = admin.agents.create({"name": slug, "slug": slug, "config": config}).agent
    key = deployment.key(agents=(agent.id,))
    client = deployment.client(key)
    client.agents.put_file(slug, {"content": program}, path="main.py")
    return Tenant(client, slug)


def processes_with(token: str) -> list[int]:
    """Host pids of the living processes whose command line holds ``token``."""
    found = []
    for pid, _ in living_processes():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if token.encode() in cmdline.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def wait_until(condition: Any, seconds: float, what: str) -> Any:
    """Poll ``condition()`` until it is truthy (its value) or fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


@dataclass
class Listener:
    """A TCP listener on loopback that counts the connections it accepts."""

    port: int = 0
    accepted: list[bytes] = field(default_factory=list)


@contextmanager
def loopback_listener() -> Iterator[Listener]:
    """A listener on 127.0.0.1 standing for the host's own services (the rate limit debug
    port, a database): answers ``secret`` to whoever connects."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    listener = Listener(server.getsockname()[1])

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(1)
                try:
                    listener.accepted.append(connection.recv(1024))
                    connection.sendall(b"HTTP/1.0 200 OK\r\n\r\nsecret")
                except OSError:
                    listener.accepted.append(b"")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        server.close()
        thread.join(timeout=5)


PROBE = """\
import json, os, socket, sys, urllib.request
args = json.load(open(os.path.join(os.environ["AGENT_INPUT_DIR"], "input.json")))
report = {}

def attempt(name, action):
    try:
        report[name] = ["ok", action()]
    except BaseException as error:
        report[name] = ["refused", f"{type(error).__name__}: {error}"[:300]]

def scan_environments():
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/environ", "rb") as environ:
                    if args["canary"].encode() in environ.read():
                        found.append(int(pid))
            except OSError:
                pass
    return found

def read(path):
    with open(path, "rb") as file:
        return len(file.read())

def write(path):
    with open(path, "w") as file:
        return file.write("written by a tenant")

def connect(port):
    with socket.create_connection(("127.0.0.1", port), timeout=3) as connection:
        connection.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
        return connection.recv(100).decode(errors="replace")

def fetch(url):
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode(errors="replace")

attempt("environ_scan", scan_environments)
for pid in args.get("host_pids", []):
    attempt(f"environ_of_{pid}", lambda pid=pid: read(f"/proc/{pid}/environ"))
attempt("visible_pids", lambda: sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
for name, path in args.get("read", {}).items():
    attempt(f"read_{name}", lambda path=path: read(path))
for name, path in args.get("list", {}).items():
    attempt(f"list_{name}", lambda path=path: sorted(os.listdir(path)))
for name, path in args.get("write", {}).items():
    attempt(f"write_{name}", lambda path=path: write(path))
if "port" in args:
    attempt("connect_loopback", lambda: connect(args["port"]))
    attempt("proxied_loopback", lambda: fetch(f"http://127.0.0.1:{args['port']}/"))
    attempt("proxied_metadata", lambda: fetch("http://169.254.169.254/latest/meta-data/"))
    attempt("proxy_variable", lambda: os.environ.get("HTTP_PROXY"))
with open(os.path.join(os.environ["AGENT_OUTPUT_DIR"], "output.json"), "w") as out:
    json.dump(report, out)
"""
"""An attacker's program: tries what ``input`` lists and reports each attempt as
``[\"ok\", value]`` or ``[\"refused\", error]`` in its output."""


ESCAPER = """\
import json, os, signal, subprocess, sys, time
args = json.load(open(os.path.join(os.environ["AGENT_INPUT_DIR"], "input.json")))
token = args["token"]
sleeper = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
subprocess.Popen(["setsid", sys.executable, "-c", sleeper, token + "-setsid"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", sleeper, token + "-double-fork"])
    os._exit(0)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(float(args.get("sleep", 600)))
with open(os.path.join(os.environ["AGENT_OUTPUT_DIR"], "output.json"), "w") as out:
    json.dump({"slept": args.get("sleep")}, out)
"""
"""Leaves a ``setsid`` child and a double-forked grandchild behind, both ignoring SIGTERM
(their command lines carry ``input.token``), then sleeps ``input.sleep`` seconds, itself
ignoring SIGTERM."""
