"""Throwaway memcached processes for tests, from the Debian ``memcached`` package.

:class:`MemcachedProcess` runs one ``memcached`` on a free loopback port (optionally TLS with
client certificates required), and can be stopped, restarted on the same port, paused
(SIGSTOP: connections are accepted by the kernel but nothing answers) and resumed.
:func:`node_of` reads a key directly from each node with pymemcache, and :func:`ttl` reads a
key's remaining time to live with the meta protocol. The pytest fixtures are module-scoped;
tests are skipped when ``memcached`` is not installed.
"""

from __future__ import annotations

import contextlib
import getpass
import shutil
import signal
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from pymemcache.client.base import Client  # type: ignore[import-untyped]

from handlers.ratelimit.backends.base import Increment
from handlers.ratelimit.backends.memcache import MemcacheStore
from handlers.ratelimit.settings import AltCacheSettings
from tests.ratelimit.redis_servers import (
    HOST,
    Certificates,
    PortTaken,
    free_port,
    make_certificates,
    wait_until,
)

_MEMCACHED = shutil.which("memcached")


def require_memcached() -> str:
    if _MEMCACHED is None:
        pytest.skip("memcached is not installed (scripts/test-services.sh installs it)")
    return _MEMCACHED


class MemcachedProcess:
    """One ``memcached`` (16 MB, one thread) on :attr:`port`."""

    def __init__(self, directory: Path, *, tls: Certificates | None = None) -> None:
        self.directory = directory
        self.port = free_port()
        self.tls = tls
        self._process: subprocess.Popen[bytes] | None = None
        self._log = directory / "memcached.log"

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    def client(self, **options: Any) -> Client:
        """A direct pymemcache client (plain TCP only); close it (``close()``)."""
        options.setdefault("connect_timeout", 2)
        options.setdefault("timeout", 2)
        return Client((HOST, self.port), **options)

    def start(self) -> MemcachedProcess:
        binary = require_memcached()
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [binary, "-l", HOST, "-p", str(self.port), "-U", "0", "-m", "16", "-t", "1"]
        command += ["-u", getpass.getuser()]  # memcached refuses to run as root without it
        if self.tls is not None:
            options = [
                f"ssl_chain_cert={self.tls.server_cert}",
                f"ssl_key={self.tls.server_key}",
                f"ssl_ca_cert={self.tls.ca}",
                "ssl_verify_mode=2",  # a client certificate is required
            ]
            command += ["-Z", "-o", ",".join(options)]
        for attempt in range(3):
            with self._log.open("wb") as log:
                self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            try:
                wait_until(self._listening, what=f"memcached on {self.address} ({self._log})")
                return self
            except PortTaken:
                self.stop()
                if attempt == 2:
                    raise
                self.port = free_port()  # someone took it since it was chosen
                command[command.index("-p") + 1] = str(self.port)
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable")

    def _listening(self) -> bool:
        if self._process is not None and self._process.poll() is not None:
            tail = self._log.read_text(errors="replace")[-2000:]
            error = PortTaken if "Address already in use" in tail else RuntimeError
            raise error(f"memcached exited ({self._process.returncode}):\n{tail}")
        with socket.create_connection((HOST, self.port), timeout=1):
            return True

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)  # a paused process must run to exit
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """SIGSTOP for the block: it accepts connections (the kernel does) but never answers."""
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP)
        stat = Path(f"/proc/{self._process.pid}/stat")
        # the signal is delivered asynchronously: wait until the process is stopped
        wait_until(lambda: stat.read_text().rsplit(")", 1)[1].split()[0] == "T", what="SIGSTOP")
        try:
            yield
        finally:
            if self._process is not None:
                self._process.send_signal(signal.SIGCONT)


def node_of(nodes: Sequence[MemcachedProcess], key: str) -> dict[int, bytes]:
    """``{index: value}`` of the nodes that hold ``key`` (read with direct clients)."""
    held: dict[int, bytes] = {}
    for index, node in enumerate(nodes):
        client = node.client()
        try:
            value = client.get(key)
        finally:
            client.close()
        if value is not None:
            held[index] = value
    return held


def ttl(node: MemcachedProcess, key: str) -> int | None:
    """Seconds ``key`` has left on ``node`` (-1: no expiry; None: missing), via ``mg key t``."""
    with socket.create_connection((HOST, node.port), timeout=2) as sock:
        sock.sendall(f"mg {key} t\r\n".encode())
        reply = b""
        while not reply.endswith(b"\r\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
    if reply.startswith(b"EN"):
        return None
    flags = reply.split()[1:]
    return next(int(flag[1:]) for flag in flags if flag.startswith(b"t"))


class SettledStore:
    """A :class:`MemcacheStore` whose :meth:`increment` returns once its increments are
    applied, as upstream's ``AutoFlushForIntegrationTests`` makes its store behave: calls
    made one after the other then see each other's increments."""

    def __init__(self, store: MemcacheStore) -> None:
        self.store = store

    async def start(self) -> None:
        await self.store.start()

    async def get(self, keys: Sequence[tuple[str, bool]]) -> list[int]:
        return await self.store.get(keys)

    async def increment(self, increments: Sequence[Increment]) -> list[int]:
        values = await self.store.increment(increments)
        await self.store.flush()
        return values

    def connected(self) -> bool:
        return self.store.connected()

    async def close(self) -> None:
        await self.store.close()


def store_settings(nodes: Sequence[MemcachedProcess], **changes: Any) -> AltCacheSettings:
    return AltCacheSettings(host_port=tuple(node.address for node in nodes), **changes)


@contextlib.asynccontextmanager
async def open_store(
    settings: AltCacheSettings, *, start: bool = True, **options: Any
) -> AsyncIterator[MemcacheStore]:
    store = MemcacheStore(settings, **options)
    try:
        if start:
            await store.start()
        yield store
    finally:
        await store.close()


@contextlib.contextmanager
def running(process: MemcachedProcess) -> Iterator[MemcachedProcess]:
    try:
        yield process.start()
    finally:
        process.stop()


@pytest.fixture(scope="module")
def memcached_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[MemcachedProcess]]:
    """Two plain TCP memcached nodes, in ``ALTCACHE_HOST_PORT`` order."""
    with (
        running(MemcachedProcess(tmp_path_factory.mktemp("memcached-0"))) as first,
        running(MemcachedProcess(tmp_path_factory.mktemp("memcached-1"))) as second,
    ):
        yield [first, second]


@pytest.fixture(scope="module")
def memcached_tls_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemcachedProcess]:
    """TLS only, client certificates required; its certificate names ``redis.invalid``."""
    directory = tmp_path_factory.mktemp("memcached-tls")
    certificates = make_certificates(directory / "certs")
    with running(MemcachedProcess(directory, tls=certificates)) as node:
        yield node
