"""The servers under test, each one process (pinned to one core when asked): the grpc.aio
echo, the Starlette echo, and the rate limit service with the memory, the Redis or the
memcached backend.
Starting one waits for its ports and then checks one real decision on each; a server that
exits, does not answer or answers wrongly raises :class:`BenchError` with its output."""

from __future__ import annotations

import ctypes
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import grpc
import redis

from bench.ratelimit import workload
from generated.proto.envoy.service.ratelimit.v3 import rls_pb2_grpc

REPO_ROOT = Path(__file__).resolve().parents[2]
START_DEADLINE_S = 30.0
STOP_GRACE_S = 5.0
CHECK_TIMEOUT_S = 10.0

GRPC = "grpc"
HTTP = "http"
PROTOCOLS: tuple[str, ...] = (GRPC, HTTP)
ECHO = "echo"
MEMORY = "memory"
REDIS = "redis"
REDIS_CLUSTER = "redis-cluster"  # the redis backend with KVSTORE_TYPE=cluster
MEMCACHE = "memcache"
KINDS: tuple[str, ...] = (ECHO, MEMORY, REDIS, REDIS_CLUSTER, MEMCACHE)


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    """Linux: SIGTERM the server when the benchmark process goes away (even killed), so no
    server outlives an interrupted run."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class BenchError(Exception):
    """A server did not start or answered wrongly, or h2load failed."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def indent(text: str) -> str:
    return "\n".join("    | " + line for line in text.rstrip().splitlines()) or "    | (no output)"


@dataclass(frozen=True)
class Endpoints:
    grpc_port: int | None
    http_port: int | None

    def port(self, protocol: str) -> int:
        port = self.grpc_port if protocol == GRPC else self.http_port
        if port is None:
            raise BenchError(f"this server has no {protocol} port")
        return port

    def url(self, protocol: str) -> str:
        path = workload.GRPC_PATH if protocol == GRPC else workload.JSON_PATH
        return f"http://127.0.0.1:{self.port(protocol)}{path}"


class ServerProcess:
    """One server process; its stdout and stderr go to a temporary file shown on failure."""

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        endpoints: Endpoints,
        *,
        log: IO[bytes],
        env: Mapping[str, str] | None = None,
        cpu: int | None = None,
    ) -> None:
        self.name = name
        self.endpoints = endpoints
        self._command = ([] if cpu is None else ["taskset", "-c", str(cpu)]) + list(command)
        self._env = dict(os.environ if env is None else env)
        self._log = log
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def start(self) -> None:
        self._proc = subprocess.Popen(
            self._command,
            cwd=REPO_ROOT,
            env=self._env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
        )
        ports = [p for p in (self.endpoints.grpc_port, self.endpoints.http_port) if p is not None]
        deadline = time.monotonic() + START_DEADLINE_S
        waiting = list(ports)
        while waiting:
            if self._proc.poll() is not None:
                raise BenchError(
                    f"{self.name}: server exited with status {self._proc.returncode} before "
                    f"answering on port(s) {', '.join(map(str, waiting))}.\n"
                    f"    command: {' '.join(self._command)}\n    its output:\n{self.output()}"
                )
            if time.monotonic() > deadline:
                raise BenchError(
                    f"{self.name}: server did not answer on port(s) "
                    f"{', '.join(map(str, waiting))} within {START_DEADLINE_S:.0f} s.\n"
                    f"    command: {' '.join(self._command)}\n    its output:\n{self.output()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", waiting[0]), timeout=0.5):
                    waiting.pop(0)
            except OSError:
                time.sleep(0.1)

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def output(self) -> str:
        self._log.flush()
        self._log.seek(0)
        text = self._log.read().decode(errors="replace")
        self._log.seek(0, os.SEEK_END)
        return indent(text)

    def stop(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def check_grpc(server: ServerProcess, descriptors: int, algorithm: str = workload.FIXED) -> None:
    """One ShouldRateLimit call through a real gRPC client: OK, each descriptor counted."""
    address = f"127.0.0.1:{server.endpoints.port(GRPC)}"
    with grpc.insecure_channel(address) as channel:
        stub = rls_pb2_grpc.RateLimitServiceStub(channel)
        try:
            response = stub.ShouldRateLimit(
                workload.request(descriptors, algorithm),
                timeout=CHECK_TIMEOUT_S,
                wait_for_ready=True,
            )
        except grpc.RpcError as error:
            raise BenchError(
                f"{server.name}: gRPC check ({descriptors} descriptor(s)) failed: "
                f"{error.code()} {error.details()}\n    server output:\n{server.output()}"
            ) from error
    problem = workload.check_decision(response, descriptors)
    if problem is not None:
        raise BenchError(
            f"{server.name}: gRPC check ({descriptors} descriptor(s)): {problem}\n"
            f"    response: {response}\n    server output:\n{server.output()}"
        )


def check_http(server: ServerProcess, descriptors: int, algorithm: str = workload.FIXED) -> None:
    """One ``POST /json``: 200 and a decision with each descriptor counted."""
    req = urllib.request.Request(
        server.endpoints.url(HTTP),
        data=workload.json_body(descriptors, algorithm),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=CHECK_TIMEOUT_S) as resp:
            status: int = resp.status
            body: bytes = resp.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    except OSError as exc:
        raise BenchError(
            f"{server.name}: POST /json failed: {exc}\n    server output:\n{server.output()}"
        ) from exc
    problem = None if status == 200 else f"status {status}"
    problem = problem or workload.check_json_decision(body, descriptors)
    if problem is not None:
        raise BenchError(
            f"{server.name}: /json check ({descriptors} descriptor(s)): {problem}\n"
            f"    body: {body[:500].decode(errors='replace')}\n"
            f"    server output:\n{server.output()}"
        )


def check(
    server: ServerProcess, protocol: str, descriptors: int, algorithm: str = workload.FIXED
) -> None:
    if protocol == GRPC:
        check_grpc(server, descriptors, algorithm)
    else:
        check_http(server, descriptors, algorithm)


def echo_server(protocol: str, log: IO[bytes], cpu: int | None) -> ServerProcess:
    """The transport floor of ``protocol``: grpc.aio or Starlette on uvicorn, one process."""
    port = free_port()
    if protocol == GRPC:
        command = [sys.executable, "-m", "bench.ratelimit.echo_grpc", "--port", str(port)]
        return ServerProcess("grpc.aio echo", command, Endpoints(port, None), log=log, cpu=cpu)
    command = [
        sys.executable, "-m", "uvicorn", "bench.ratelimit.echo_http:app",
        "--host", "127.0.0.1", "--port", str(port), "--workers", "1", "--no-access-log",
        "--log-level", "warning", "--loop", "asyncio", "--http", "httptools",
    ]  # fmt: skip
    return ServerProcess("Starlette echo", command, Endpoints(None, port), log=log, cpu=cpu)


@dataclass(frozen=True)
class RedisTarget:
    host: str
    port: int

    @classmethod
    def parse(cls, url: str) -> RedisTarget:
        host, _, port = url.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"expected HOST:PORT, not {url!r}")
        return cls(host, int(port))

    @property
    def url(self) -> str:
        return f"{self.host}:{self.port}"

    def counted(self, prefix: str) -> int:
        return redis_counted(self, prefix)

    def delete(self, prefix: str) -> int:
        return redis_delete(self, prefix)


def unique_prefix() -> str:
    """A CACHE_KEY_PREFIX no other run shares (and without glob characters, for SCAN)."""
    return f"bench-ratelimit-{os.getpid()}-{secrets.token_hex(4)}:"


def ratelimit_server(
    backend: str,
    runtime_root: Path,
    *,
    redis: RedisTarget,
    key_prefix: str,
    log: IO[bytes],
    cpu: int | None,
    memcached: str = "127.0.0.1:11211",
    redis_cluster: str = "",
) -> ServerProcess:
    """``python -m handlers.ratelimit.server`` with one worker, reading the bench's rules;
    ``redis-cluster``: the Redis backend on the cluster of nodes ``redis_cluster``."""
    grpc_port, http_port, debug_port = free_port(), free_port(), free_port()
    env = dict(os.environ)
    env.update(
        {
            "BACKEND_TYPE": backend,
            "WORKERS": "1",
            "GRPC_HOST": "127.0.0.1",
            "GRPC_PORT": str(grpc_port),
            "HOST": "127.0.0.1",
            "PORT": str(http_port),
            "DEBUG_HOST": "127.0.0.1",
            "DEBUG_PORT": str(debug_port),
            "RUNTIME_ROOT": str(runtime_root),
            "RUNTIME_SUBDIRECTORY": RUNTIME_SUBDIRECTORY,
            "RUNTIME_APPDIRECTORY": RUNTIME_APPDIRECTORY,
            "RUNTIME_WATCH_ROOT": "false",
            "KVSTORE_SOCKET_TYPE": "tcp",
            "KVSTORE_URL": redis.url,
            "ALTCACHE_HOST_PORT": memcached,
            "CACHE_KEY_PREFIX": key_prefix,
            "LOG_LEVEL": "WARN",
            "USE_STATSD": "false",
        }
    )
    if backend == REDIS_CLUSTER:
        env.update(BACKEND_TYPE=REDIS, KVSTORE_TYPE="cluster", KVSTORE_URL=redis_cluster)
    command = [sys.executable, "-m", "handlers.ratelimit.server"]
    name = f"ratelimit ({backend})"
    return ServerProcess(name, command, Endpoints(grpc_port, http_port), log=log, env=env, cpu=cpu)


RUNTIME_SUBDIRECTORY = "ratelimit"
RUNTIME_APPDIRECTORY = "config"


def write_rules(runtime_root: Path, algorithms: tuple[str, ...] = (workload.FIXED,)) -> Path:
    return workload.write_rules(
        runtime_root, RUNTIME_SUBDIRECTORY, RUNTIME_APPDIRECTORY, algorithms
    )


def redis_counted(target: RedisTarget, prefix: str) -> int:
    """The sum of the counters under ``prefix``: the hits the service counted in Redis."""
    client = redis.Redis(host=target.host, port=target.port, socket_timeout=10)
    try:
        total = 0
        for key in client.scan_iter(match=prefix + "*", count=1000):
            value = client.get(key)
            if value is not None:
                total += int(value)
        return total
    finally:
        client.close()


def redis_algorithm_counted(target: RedisTarget, prefix: str) -> tuple[int, int]:
    """(hits, keys) under ``prefix`` for the algorithm rows: the keys, and the hits their
    counting states hold: a fixed window's count (an ``INCRBY`` integer, or the Lua script's
    ``"<window start ms>:<count>"``), a sliding window's current plus previous count
    (``"<window start ms>:<current>:<previous>"``); a token bucket's state (``…_tb<ms>``,
    ``"<TAT ms>:<TAT fraction>"``) holds no count and adds none."""
    client = redis.Redis(host=target.host, port=target.port, socket_timeout=10)
    try:
        hits = keys = 0
        for key in client.scan_iter(match=prefix + "*", count=1000):
            value = client.get(key)
            if value is None:
                continue
            keys += 1
            tag = key.decode(errors="replace").rsplit("_", 1)[-1]
            parts = [int(p) for p in value.decode().split(":")]
            if tag.startswith("tb"):
                continue
            hits += parts[0] if len(parts) == 1 else sum(parts[1:])
        return hits, keys
    finally:
        client.close()


def redis_delete(target: RedisTarget, prefix: str) -> int:
    """Delete every key under ``prefix``; how many there were."""
    client = redis.Redis(host=target.host, port=target.port, socket_timeout=10)
    try:
        keys = list(client.scan_iter(match=prefix + "*", count=1000))
        if keys:
            client.delete(*keys)
        return len(keys)
    finally:
        client.close()


def redis_ping(target: RedisTarget) -> str | None:
    """Why Redis cannot be used, or None."""
    client = redis.Redis(host=target.host, port=target.port, socket_timeout=3)
    try:
        client.ping()
        return None
    except redis.RedisError as error:
        return f"Redis at {target.url} does not answer PING ({error}); `make services` starts it"
    finally:
        client.close()


def memcached_ping(address: str) -> str | None:
    """Why the memcached at ``address`` (``HOST:PORT``) cannot be used, or None."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=3) as sock:
            sock.sendall(b"version\r\n")
            if sock.recv(100).startswith(b"VERSION "):
                return None
            problem = "answered something else than VERSION"
    except (OSError, ValueError) as error:
        problem = str(error)
    return f"memcached at {address} does not answer ({problem}); `make services` starts it"


def memcached_counted(address: str, prefix: str, descriptors: int) -> int:
    """The sum of the bench's counters under ``prefix`` (this hour's window and the last's;
    memcached cannot list keys, but the bench's are known: one per descriptor)."""
    now = int(time.time())
    keys = [
        f"{prefix}{workload.DOMAIN}_{workload.KEYS[i]}_{workload.VALUES[i]}_{window}"
        for i in range(descriptors)
        for window in {now // 3600 * 3600, (now - 3600) // 3600 * 3600}
    ]
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(("get " + " ".join(keys) + "\r\n").encode())
        reply = b""
        while not reply.endswith(b"END\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                raise BenchError(f"memcached at {address} closed the connection")
            reply += chunk
    lines = reply.split(b"\r\n")
    return sum(int(lines[i + 1]) for i, line in enumerate(lines) if line.startswith(b"VALUE "))
