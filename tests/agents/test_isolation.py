"""Attacks on the service by a tenant's agent program, run through real deployments.

Each test is something a tenant holding a key scoped to one agent (and no right to create
agents) tried with its program: reading the service's environment, database, data directory
and another tenant's workspace, the host's processes; writing outside its run directory;
reaching the host's services over the network; exhausting processes, memory and CPU; leaving
processes behind after a timeout, a cancel, and the death of its worker. Every attack must be
refused or contained, and the execution must end as documented. One control test runs the same
attack unsandboxed (``AGENTS_SANDBOX=none``) to show that it works there, so that these tests
would fail if the sandbox did not hold.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from generated.agents.client import ServiceClient
from handlers.agents.execution.agent_job import run_limits
from handlers.agents.runner import RunLimits
from handlers.agents.settings import Settings, SettingsError
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import Execution
from tests.agents.isolation_support import (
    CANARY,
    DEPLOYMENTS,
    ESCAPER,
    PROBE,
    Deployment,
    deployed,
    loopback_listener,
    processes_with,
    tenant_agent,
    wait_until,
)
from tests.agents.run_support import ROOT, wait_for
from tests.agents.support import PostgresDatabases, Storage


def _storage(kind: str, data_dir: Path, request: pytest.FixtureRequest) -> Storage:
    if kind == "sqlite":
        return Storage(data_dir, f"sqlite:///{data_dir / 'agents.db'}")
    databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
    return Storage(data_dir, databases.create())


@pytest.fixture(scope="module", params=DEPLOYMENTS)
def deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    kind = str(request.param)
    root = tmp_path_factory.mktemp(f"isolation-{kind}")
    with deployed(kind, _storage(kind, root / "data", request), root) as running:
        yield running


def _run(client: ServiceClient, agent: str, data: dict[str, Any], timeout: float = 60) -> Any:
    run = client.agents.run(agent, {"input": data})
    return wait_for(client, run.execution_id, timeout=timeout)


def _probe_targets(deployment: Deployment) -> dict[str, Any]:
    data_dir = deployment.storage.data_dir
    blobs = sorted(glob.glob(str(data_dir / "blobs" / "*" / "*")))
    database = deployment.storage.database_url.removeprefix("sqlite:///")
    return {
        "canary": CANARY,
        "host_pids": [deployment.server.process.pid, *deployment.program_runners],
        "read": {
            "database": database if deployment.kind == "sqlite" else str(data_dir),
            "blob": blobs[0],
            "shadow": "/etc/shadow",
            "server_environ": f"/proc/{deployment.server.process.pid}/environ",
        },
        "list": {"data_dir": str(data_dir), "root_home": "/root"},
    }


def test_a_program_cannot_read_the_service_its_data_or_the_hosts_processes(
    deployment: Deployment,
) -> None:
    tenant = tenant_agent(deployment, PROBE)
    with tenant.client:
        ended = _run(tenant.client, tenant.agent, _probe_targets(deployment))

    assert ended.status.value == "completed", ended.error
    report = ended.output
    assert report["environ_scan"] == ["ok", []]  # no process it can see holds the canary
    for pid in deployment.program_runners:
        assert report[f"environ_of_{pid}"][0] == "refused", report
    for name in ("database", "blob", "shadow", "server_environ"):
        assert report[f"read_{name}"][0] == "refused", (name, report[f"read_{name}"])
    assert report["list_data_dir"][0] == "refused"
    assert report["list_root_home"][0] == "refused"
    visible = report["visible_pids"][1]
    assert max(visible) < 50, visible  # its own PID namespace, not the host's processes


def test_a_program_cannot_read_another_runs_workspace(deployment: Deployment) -> None:
    secret = f"workspace-secret-{time.monotonic_ns()}"
    holder = tenant_agent(deployment, ESCAPER)
    with holder.client:
        holder.client.agents.put_file(holder.agent, {"content": secret}, path="secret.txt")
        running = holder.client.agents.run(holder.agent, {"input": {"token": secret}})
        wait_until(lambda: processes_with(secret), 30, "the other run to start")
        (secret_file,) = wait_until(
            lambda: glob.glob(
                f"/tmp/agent-runs-*/*/agent-run-{running.execution_id}-*/workspace/secret.txt"
            ),
            10,
            "the other run's workspace",
        )
        attacker = tenant_agent(deployment, PROBE)
        with attacker.client:
            targets = {"canary": CANARY, "read": {"other": secret_file},
                       "list": {"other": str(Path(secret_file).parent)}}  # fmt: skip
            ended = _run(attacker.client, attacker.agent, targets)
        holder.client.agents.executions.cancel(running.execution_id)

    assert ended.status.value == "completed", ended.error
    assert ended.output["read_other"][0] == "refused"
    assert ended.output["list_other"][0] == "refused"


def test_a_program_can_write_only_its_run_directory(deployment: Deployment) -> None:
    outside = {
        "root": "/planted",
        "usr": "/usr/planted",
        "etc": "/etc/planted",
        "input": "/agent/input/planted",
        "dev": "/dev/planted",
        "data_dir": str(deployment.storage.data_dir / "planted"),
    }
    inside = {"workspace": "/agent/workspace/planted", "output": "/agent/output/planted.txt",
              "tmp": "/tmp/planted", "tmpdir": "/agent/tmp/planted"}  # fmt: skip
    tenant = tenant_agent(deployment, PROBE)
    with tenant.client:
        ended = _run(tenant.client, tenant.agent, {"canary": CANARY, "write": outside | inside})

    assert ended.status.value == "completed", ended.error
    for name in outside:
        assert ended.output[f"write_{name}"][0] == "refused", (name, ended.output)
    for name in inside:
        assert ended.output[f"write_{name}"][0] == "ok", (name, ended.output)
    assert not (deployment.storage.data_dir / "planted").exists()


@pytest.mark.parametrize("network", ["none", "outbound"])
def test_a_program_cannot_reach_the_hosts_services(deployment: Deployment, network: str) -> None:
    config = {"entrypoint": ["python", "main.py"], "network": network}
    tenant = tenant_agent(deployment, PROBE, config)
    with loopback_listener() as listener, tenant.client:
        ended = _run(tenant.client, tenant.agent, {"canary": CANARY, "port": listener.port})

    assert ended.status.value == "completed", ended.error
    report = ended.output
    assert listener.accepted == []  # nothing reached the host's listener
    assert report["connect_loopback"][0] == "refused"  # its own loopback has nothing on it
    assert report["proxied_loopback"][0] == "refused"
    assert report["proxied_metadata"][0] == "refused"
    if network == "outbound":
        assert report["proxy_variable"] == ["ok", "http://127.0.0.1:3128"]
        assert "403" in report["proxied_loopback"][1]  # the egress proxy refused it
        assert "403" in report["proxied_metadata"][1]
    else:
        assert report["proxy_variable"] == ["ok", None]


def test_a_fork_bomb_is_contained_and_the_service_goes_on(deployment: Deployment) -> None:
    bombs = {
        "python": "import os\nwhile True:\n    os.fork()\n",
        "shell": "import subprocess, time\nsubprocess.run(['bash', '-c', ':(){ :|:& };:'])\n"
        "time.sleep(60)\n",
    }
    for name, program in bombs.items():
        config = {"entrypoint": ["python", "main.py"], "timeoutSeconds": 3}
        tenant = tenant_agent(deployment, program, config)
        with tenant.client:
            ended = _run(tenant.client, tenant.agent, {})
        assert ended.status.value == "failed", name
        assert "process limit (256 processes and threads) reached" in ended.error, ended.error

    tenant = tenant_agent(deployment, PROBE)
    with tenant.client:
        assert _run(tenant.client, tenant.agent, {"canary": CANARY}).status.value == "completed"


def test_memory_and_cpu_exhaustion_fail_naming_the_limit(deployment: Deployment) -> None:
    memory = tenant_agent(deployment, "data = bytearray(3 * 1024 ** 3)\n")
    cpu = tenant_agent(deployment, "while True:\n    pass\n")  # AGENTS_RUN_MAX_CPU_SECONDS=2
    with memory.client, cpu.client:
        by_memory = _run(memory.client, memory.agent, {})
        by_cpu = _run(cpu.client, cpu.agent, {})

    assert by_memory.status.value == "failed"
    assert by_memory.error.startswith(
        "exit code 1 (memory limit (2 GiB of address space per process) reached): "
    )
    assert by_memory.error.endswith("MemoryError")
    assert by_cpu.status.value == "failed"
    assert by_cpu.error == (
        "killed by signal SIGXCPU (CPU time limit (2 s of CPU time per process) reached)"
    )


def test_escaped_processes_end_with_a_timeout_and_with_a_cancel(deployment: Deployment) -> None:
    config = {"entrypoint": ["python", "main.py"], "timeoutSeconds": 2}
    timed = tenant_agent(deployment, ESCAPER, config)
    cancelled = tenant_agent(deployment, ESCAPER)
    timed_token, cancel_token = f"timeout-{time.monotonic_ns()}", f"cancel-{time.monotonic_ns()}"
    with timed.client, cancelled.client:
        first = timed.client.agents.run(timed.agent, {"input": {"token": timed_token}})
        second = cancelled.client.agents.run(cancelled.agent, {"input": {"token": cancel_token}})
        wait_until(lambda: len(processes_with(timed_token)) == 2, 30, "the escapees")
        wait_until(lambda: len(processes_with(cancel_token)) == 2, 30, "the escapees")
        cancelled.client.agents.executions.cancel(second.execution_id)
        by_timeout = wait_for(timed.client, first.execution_id, timeout=30)
        by_cancel = wait_for(cancelled.client, second.execution_id, timeout=30)

    assert (by_timeout.status.value, by_timeout.error) == ("failed", "timed out after 2 s")
    assert (by_cancel.status.value, by_cancel.error) == ("cancelled", "cancelled")
    assert processes_with(timed_token) == []
    assert processes_with(cancel_token) == []


def test_escaped_processes_end_with_a_killed_agents_worker(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    storage = Storage(tmp_path / "data", postgres_databases.create())
    token = f"worker-kill-{time.monotonic_ns()}"
    with deployed("postgresql-worker", storage, tmp_path) as deployment:
        tenant = tenant_agent(deployment, ESCAPER)
        with tenant.client:
            run = tenant.client.agents.run(tenant.agent, {"input": {"token": token, "sleep": 3}})
            wait_until(lambda: len(processes_with(token)) == 2, 30, "the escapees")
            first_attempt = processes_with(token)
            holder = wait_until(lambda: _worker_of(storage, run.execution_id), 10, "a lease")
            pid = int(holder.rsplit(":", 1)[1])
            assert pid in deployment.program_runners
            os.kill(pid, signal.SIGKILL)

            wait_until(lambda: not set(first_attempt) & set(processes_with(token)), 5,
                       "the first attempt's processes to end with their worker")  # fmt: skip
            ended = wait_for(tenant.client, run.execution_id, timeout=60)

    assert ended.status.value == "completed"  # retried by the other worker
    assert processes_with(token) == []


def test_escaped_processes_end_with_a_killed_server(tmp_path: Path) -> None:
    storage = Storage(tmp_path / "data", f"sqlite:///{tmp_path / 'data' / 'agents.db'}")
    token = f"server-kill-{time.monotonic_ns()}"
    with deployed("sqlite", storage, tmp_path) as deployment:
        tenant = tenant_agent(deployment, ESCAPER)
        with tenant.client:
            tenant.client.agents.run(tenant.agent, {"input": {"token": token}})
            wait_until(lambda: len(processes_with(token)) == 2, 30, "the escapees")
            os.kill(deployment.server.process.pid, signal.SIGKILL)
            wait_until(lambda: processes_with(token) == [], 5,
                       "the escapees to end with the server")  # fmt: skip


def _worker_of(storage: Storage, execution_id: str) -> str | None:
    """The worker id (``host:pid``) holding the execution's lease."""
    database = Database(storage.database_url)
    try:
        row = database.read_sync(lambda session: session.get(Execution, execution_id))
    finally:
        database.dispose()
    return row.worker_id if row is not None and row.status == "running" else None


def test_without_the_sandbox_the_same_attacks_succeed(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The control: proves the probe would see a leak (AGENTS_SANDBOX=none)."""
    storage = _storage("sqlite", tmp_path / "data", request)
    with deployed("sqlite", storage, tmp_path, {"AGENTS_SANDBOX": "none"}) as deployment:
        tenant = tenant_agent(deployment, PROBE)
        with tenant.client:
            ended = _run(tenant.client, tenant.agent, _probe_targets(deployment))
        log = (tmp_path / "sqlite-server.log").read_text()

    assert "AGENTS_SANDBOX=none: agent programs run UNISOLATED" in log
    assert ended.status.value == "completed", ended.error
    assert ended.output["read_database"][0] == "ok"
    assert ended.output["read_server_environ"][0] == "ok"
    assert deployment.server.process.pid in ended.output["environ_scan"][1]


def _start_without_bwrap(module: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module],
        env={**os.environ, "AGENTS_PORT": "0", **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_server_and_worker_refuse_to_start_without_a_sandbox_unless_told(
    tmp_path: Path, postgres_databases: PostgresDatabases
) -> None:
    no_bwrap = {"PATH": str(tmp_path), "AGENTS_DATA_DIR": str(tmp_path / "data")}
    postgres = {**no_bwrap, "AGENTS_DATABASE_URL": postgres_databases.create()}

    server = _start_without_bwrap("handlers.agents.server", no_bwrap)
    worker = _start_without_bwrap("handlers.agents.worker", postgres)

    for refused in (server, worker):
        assert refused.returncode == 2, refused.stderr
        assert "agent programs cannot be sandboxed: bubblewrap (bwrap) is not installed; " in (
            refused.stderr
        )
        assert "apt-get install bubblewrap" in refused.stderr
        assert "or set AGENTS_SANDBOX=none" in refused.stderr
    storage = Storage(tmp_path / "none", f"sqlite:///{tmp_path / 'none' / 'agents.db'}")
    with deployed("sqlite", storage, tmp_path, {"PATH": str(tmp_path), "AGENTS_SANDBOX": "none"}):
        log = (tmp_path / "sqlite-server.log").read_text()
    assert "WARNING agents.sandbox AGENTS_SANDBOX=none: agent programs run UNISOLATED" in log


def test_sandbox_and_run_limit_settings_come_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "AGENTS_SANDBOX": "none",
            "AGENTS_SANDBOX_UID": "4000",
            "AGENTS_SANDBOX_GID": "4001",
            "AGENTS_RUN_MAX_MEMORY": "512MiB",
            "AGENTS_RUN_MAX_CPU_SECONDS": "30",
            "AGENTS_RUN_MAX_PROCESSES": "64",
            "AGENTS_RUN_MAX_FILE_SIZE": "1GiB",
            "AGENTS_RUN_MAX_OPEN_FILES": "256",
        }
    )
    assert (settings.sandbox, settings.sandbox_uid, settings.sandbox_gid) == ("none", 4000, 4001)
    assert run_limits(settings) == RunLimits(
        max_memory_bytes=512 * 1024**2,
        max_cpu_seconds=30,
        max_processes=64,
        max_file_bytes=1024**3,
        max_open_files=256,
    )
    defaults = Settings.from_env({})
    assert (defaults.sandbox, defaults.sandbox_uid, defaults.run_max_cpu_seconds) == (
        "bwrap", 65534, None,
    )  # fmt: skip
    assert run_limits(defaults) == RunLimits(max_file_bytes=50_000_000)
    for name, value in (
        ("AGENTS_SANDBOX", "docker"),
        ("AGENTS_SANDBOX_UID", "0"),
        ("AGENTS_RUN_MAX_MEMORY", "lots"),
        ("AGENTS_RUN_MAX_CPU_SECONDS", "0"),
        ("AGENTS_RUN_MAX_PROCESSES", "2"),
        ("AGENTS_RUN_MAX_OPEN_FILES", "-1"),
    ):
        with pytest.raises(SettingsError, match=name):
            Settings.from_env({name: value})
