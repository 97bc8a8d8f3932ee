"""The bubblewrap sandbox through the runner: what a program sees, its limits, its network."""

from __future__ import annotations

import asyncio
import fcntl
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from handlers.agents.egress import EgressPolicy
from handlers.agents.runner import (
    Bubblewrap,
    CancelSignal,
    RunLimits,
    RunOutcome,
    RunSpec,
    SandboxUnavailable,
    make_sandbox,
    run,
)
from handlers.agents.runner.egress_proxy import EgressProxy
from handlers.agents.runner.work_root import WorkRoot, WorkRootError

LOOPBACK = EgressPolicy.parse(["127.0.0.0/8"])


def sandbox(egress: EgressPolicy | None = None) -> Bubblewrap:
    made = make_sandbox("bwrap", uid=65534, gid=65534, egress=egress or EgressPolicy())
    assert isinstance(made, Bubblewrap)
    return made


async def run_sandboxed(code: str, egress: EgressPolicy | None = None, **fields: Any) -> RunOutcome:
    fields.setdefault("timeout_seconds", 20.0)
    spec = RunSpec(
        execution_id=fields.pop("execution_id", "aex_sandbox"),
        command=fields.pop("command", ("python", "main.py")),
        workspace={"main.py": textwrap.dedent(code).encode()},
        **fields,
    )
    return await run(spec, CancelSignal(), sandbox=sandbox(egress))


async def test_the_program_sees_its_run_directory_as_an_unprivileged_user() -> None:
    code = """
        import json, os, socket
        out = os.environ["AGENT_OUTPUT_DIR"]
        seen = {
            "uid": os.getuid(), "gid": os.getgid(), "cwd": os.getcwd(),
            "hostname": socket.gethostname(),
            "env": {k: v for k, v in os.environ.items() if k not in ("PWD", "LANG")},
            "input": open(os.path.join(os.environ["AGENT_INPUT_DIR"], "input.json")).read(),
            "root": sorted(os.listdir("/")),
            "user": open("/etc/passwd").read().splitlines()[1].split(":")[0],
        }
        json.dump(seen, open(os.path.join(out, "output.json"), "w"))
    """
    outcome = await run_sandboxed(code, input_json={"q": 1}, env={"PATH": "/usr/bin:/bin"})

    assert outcome.status == "completed", outcome.error
    seen = outcome.output_json
    assert isinstance(seen, dict)
    assert (seen["uid"], seen["gid"], seen["cwd"], seen["hostname"]) == (
        1000, 1000, "/agent/workspace", "agent",
    )  # fmt: skip
    # /run/agent/bin holds the `python` shim where the system has only python3
    assert seen["env"].pop("PATH") in ("/usr/bin:/bin", "/run/agent/bin:/usr/bin:/bin")
    assert seen["env"] == {
        "HOME": "/agent/workspace",
        "TMPDIR": "/agent/tmp",
        "AGENT_EXECUTION_ID": "aex_sandbox",
        "AGENT_WORKSPACE_DIR": "/agent/workspace",
        "AGENT_INPUT_DIR": "/agent/input",
        "AGENT_OUTPUT_DIR": "/agent/output",
    }
    assert seen["input"] == '{"q": 1}'
    assert seen["user"] == "agent"
    assert "root" not in seen["root"] and "home" not in seen["root"] and "work" not in seen["root"]


@pytest.mark.parametrize(
    "command",
    [
        ("python", "-c", "print('ok')"),
        ("python3", "-c", "print('ok')"),
        ("bash", "-c", "echo ok"),
        ("sh", "-c", "echo ok"),
    ],
)
async def test_the_documented_interpreters_run(command: tuple[str, ...]) -> None:
    outcome = await run_sandboxed("", command=command)

    assert (outcome.status, outcome.stdout_tail) == ("completed", "ok\n"), outcome.error


async def test_the_resource_limits_hold_inside_the_sandbox() -> None:
    code = """
        import json, os
        limits = {}
        for line in open("/proc/self/limits").readlines()[1:]:
            limits[line[:26].strip()] = line[26:47].strip()
        json.dump(limits, open(os.path.join(os.environ["AGENT_OUTPUT_DIR"], "output.json"), "w"))
    """
    limits = RunLimits(max_memory_bytes=1024**3, max_processes=64, max_cpu_seconds=7,
                       max_file_bytes=3_000_000, max_open_files=100)  # fmt: skip
    outcome = await run_sandboxed(code, limits=limits)

    assert outcome.status == "completed", outcome.error
    seen = outcome.output_json
    assert isinstance(seen, dict)
    assert seen["Max address space"] == str(1024**3)
    assert seen["Max processes"] == "64"
    assert seen["Max cpu time"] == "7"
    assert seen["Max file size"] == "3000000"
    assert seen["Max open files"] == "100"
    assert seen["Max core file size"] == "0"


async def test_exit_codes_and_signals_come_through_the_sandbox() -> None:
    exits = await run_sandboxed("import sys; print('bye', file=sys.stderr); sys.exit(3)")
    killed = await run_sandboxed("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    missing = await run_sandboxed("", command=("no-such-program",))

    assert (exits.status, exits.exit_code, exits.error) == ("failed", 3, "exit code 3: bye")
    assert (killed.exit_code, killed.error) == (-11, "killed by signal SIGSEGV")
    assert (missing.exit_code, missing.error) == (
        None, "cannot start 'no-such-program': No such file or directory",
    )  # fmt: skip


@contextmanager
def web_server(host: str = "127.0.0.1") -> Iterator[tuple[int, list[str]]]:
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"hello from the host")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((host, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


PROXIED = """
    import http.client, json, os, sys, urllib.request
    port = int(sys.argv[1])
    result = {}
    try:
        result["get"] = urllib.request.urlopen(f"http://127.0.0.1:{port}/plain").read().decode()
    except Exception as error:
        result["get"] = str(error)
    tunnel = http.client.HTTPConnection("127.0.0.1", 3128, timeout=5)
    tunnel.set_tunnel("127.0.0.1", port)
    try:
        tunnel.request("GET", "/tunnelled")
        result["connect"] = tunnel.getresponse().read().decode()
    except Exception as error:
        result["connect"] = str(error)
    json.dump(result, open(os.path.join(os.environ["AGENT_OUTPUT_DIR"], "output.json"), "w"))
"""


async def test_outbound_goes_through_the_egress_proxy_both_ways() -> None:
    with web_server() as (port, seen):
        allowed = await run_sandboxed(
            PROXIED, LOOPBACK, command=("python", "main.py", str(port)), network="outbound"
        )
        refused = await run_sandboxed(
            PROXIED, None, command=("python", "main.py", str(port)), network="outbound"
        )

    assert allowed.output_json == {"get": "hello from the host", "connect": "hello from the host"}
    assert sorted(seen) == ["/plain", "/tunnelled"]  # the allowlisted run only
    assert isinstance(refused.output_json, dict)
    assert refused.output_json["get"] == "HTTP Error 403: Forbidden"
    assert "403" in refused.output_json["connect"]


async def test_without_network_nothing_is_reachable_even_when_allowlisted() -> None:
    with web_server() as (port, seen):
        outcome = await run_sandboxed(
            PROXIED, LOOPBACK, command=("python", "main.py", str(port)), network="none"
        )

    assert seen == []
    assert isinstance(outcome.output_json, dict)
    assert "Connection refused" in outcome.output_json["get"]


async def test_the_program_ends_with_its_run_when_the_bridge_is_in_between() -> None:
    outcome = await run_sandboxed("import sys; sys.exit(4)", network="outbound")

    assert (outcome.status, outcome.exit_code) == ("failed", 4)


def test_an_unusable_sandbox_refuses_with_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it

    with pytest.raises(SandboxUnavailable) as refused:
        make_sandbox("bwrap", uid=65534, gid=65534, egress=EgressPolicy())

    message = str(refused.value)
    assert message.startswith(
        "agent programs cannot be sandboxed: bubblewrap (bwrap) is not installed; "
        "install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap;"
    )
    assert message.endswith(
        "or set AGENTS_SANDBOX=none to run agent programs unisolated (trusted single-user "
        "development only)"
    )


def test_work_folders_of_dead_processes_are_removed_and_live_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    base = tmp_path / f"agent-runs-{os.geteuid()}"
    base.mkdir(mode=0o711)
    dead = base / "worker-1-dead"
    (dead / "agent-run-x" / "workspace").mkdir(parents=True)
    (dead / ".lock").touch()
    alive = base / "worker-2-alive"
    alive.mkdir()
    (alive / ".lock").touch()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR);"
         " fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)",
         str(alive / ".lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        mine = WorkRoot().path(None)
        assert not dead.exists()
        assert alive.exists()
        assert mine.parent == base and mine.name.startswith(f"worker-{os.getpid()}-")
        lock = os.open(mine / ".lock", os.O_RDWR)
        with pytest.raises(BlockingIOError):  # this process holds it
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(lock)
    finally:
        holder.kill()
        holder.communicate()


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox switches users only as root")
def test_a_work_root_the_sandbox_user_cannot_reach_is_refused_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", str(private))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    with pytest.raises(WorkRootError, match=r"cannot pass through .* point TMPDIR"):
        WorkRoot().path((65534, 65534))


@contextmanager
def echo_server() -> Iterator[int]:
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                while data := connection.recv(1024):
                    connection.sendall(data.upper())

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


async def _ask(proxy: EgressProxy, request: bytes, then: bytes = b"") -> bytes:
    reader, writer = await asyncio.open_unix_connection(str(proxy.path))
    writer.write(request)
    await writer.drain()
    if then:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(then)
        writer.write_eof()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return answer


async def test_the_egress_proxy_tunnels_allowed_destinations_and_refuses_the_rest(
    tmp_path: Path,
) -> None:
    proxy = EgressProxy(EgressPolicy.parse(["127.0.0.2/32"]), tmp_path / "proxy.sock")
    await proxy.start()
    try:
        with echo_server() as port:
            tunnelled = await _ask(proxy, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
            refusals = {
                "loopback": b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % port,
                "metadata": b"GET http://169.254.169.254/latest HTTP/1.1\r\nHost: x\r\n\r\n",
                "no port": b"CONNECT example.com HTTP/1.1\r\n\r\n",
                "https url": b"GET https://example.com/ HTTP/1.1\r\n\r\n",
                "garbage": b"hello\r\n\r\n",
                "huge head": b"GET http://example.com/ HTTP/1.1\r\nX: "
                + b"a" * 20000
                + b"\r\n\r\n",
            }
            answers = {name: await _ask(proxy, request) for name, request in refusals.items()}
        with echo_server() as port:
            allowed = EgressProxy(EgressPolicy.parse(["127.0.0.1/32"]), tmp_path / "open.sock")
            await allowed.start()
            try:
                echoed = await _ask(
                    allowed, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode(), b"ping"
                )
            finally:
                await allowed.close()
    finally:
        await proxy.close()

    assert tunnelled.startswith(b"HTTP/1.1 403 Forbidden\r\n")
    assert b"127.0.0.1 is a loopback address" in tunnelled
    assert answers["loopback"].startswith(b"HTTP/1.1 403 ")
    assert answers["metadata"].startswith(b"HTTP/1.1 403 ")
    assert b"169.254.169.254 is a link-local address" in answers["metadata"]
    assert answers["no port"].startswith(b"HTTP/1.1 400 ")
    assert answers["https url"].startswith(b"HTTP/1.1 400 ")
    assert answers["garbage"].startswith(b"HTTP/1.1 400 ")
    assert answers["huge head"].startswith(b"HTTP/1.1 431 ")
    assert echoed == b"PING"
    assert not proxy.path.exists()
