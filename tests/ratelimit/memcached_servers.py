"""Throwaway memcached processes for tests, from the Debian ``memcached`` package.

:class:`MemcachedProcess` runs one ``memcached`` on a free loopback port (optionally TLS with
client certificates required), and can be stopped, restarted on the same port, paused
(SIGSTOP: connections are accepted by the kernel but nothing answers) and resumed.
Starting, retrying on a taken port, pausing and stopping come from
:class:`~tests.ratelimit.server_process.ServerProcess`.
:func:`node_of` reads a key directly from each node with pymemcache, and :func:`ttl` reads a
key's remaining time to live with the meta protocol. The pytest fixtures are module-scoped;
tests are skipped when ``memcached`` is not installed.
"""

from __future__ import annotations

import contextlib
import getpass
import shutil
import socket
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pymemcache.client.base import Client  # type: ignore[import-untyped]

from handlers.ratelimit.backends.base import Increment
from handlers.ratelimit.backends.memcache import MemcacheStore
from handlers.ratelimit.settings import AltCacheSettings
from tests.ratelimit.redis_servers import Certificates, make_certificates
from tests.ratelimit.server_process import HOST, ServerProcess, running

_MEMCACHED = shutil.which("memcached")


def require_memcached() -> str:
    if _MEMCACHED is None:
        pytest.skip("memcached is not installed (scripts/test-services.sh installs it)")
    return _MEMCACHED


class MemcachedProcess(ServerProcess):
    """One ``memcached`` (16 MB, one thread) on :attr:`port`."""

    name: ClassVar[str] = "memcached"
    log_name: ClassVar[str] = "memcached.log"

    def __init__(self, directory: Path, *, tls: Certificates | None = None) -> None:
        super().__init__(directory)
        self.tls = tls

    def client(self, **options: Any) -> Client:
        """A direct pymemcache client (plain TCP only); close it (``close()``)."""
        options.setdefault("connect_timeout", 2)
        options.setdefault("timeout", 2)
        return Client((HOST, self.port), **options)

    def _command(self) -> list[str]:
        binary = require_memcached()
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
        return command

    def _answers(self) -> bool:
        with socket.create_connection((HOST, self.port), timeout=1):
            return True


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
