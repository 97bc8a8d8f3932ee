"""Nodes from an SRV record (``ALTCACHE_SRV``), refreshed every ``ALTCACHE_SRV_REFRESH``.

The record is served by a real authoritative DNS server written for the tests
(:mod:`tests.ratelimit.dns_server`, UDP on loopback) and looked up through dnspython, as in
production; the store is handed a resolver that asks that server
(:func:`~handlers.ratelimit.backends.memcache_servers.srv_resolver`). The targets are
``localhost.`` on the ports of real memcached processes, and where keys land is read from
those processes directly.
"""

from __future__ import annotations

import logging
import uuid
import zlib
from collections.abc import AsyncIterator, Sequence

import pytest

from handlers.ratelimit.backends.base import BackendError, Increment
from handlers.ratelimit.backends.memcache import MemcacheStore
from handlers.ratelimit.backends.memcache_servers import srv_resolver
from handlers.ratelimit.settings import AltCacheSettings
from tests.ratelimit.dns_server import AuthoritativeDns, SrvRecord, dns_server
from tests.ratelimit.memcached_servers import MemcachedProcess, memcached_nodes, node_of, open_store
from tests.ratelimit.redis_servers import eventually

__all__ = ["memcached_nodes"]  # the fixture

SRV = "_memcache._tcp.ratelimit.test"
REFRESH = 0.05
LOGGER = "handlers.ratelimit.backends.memcache_servers"


@pytest.fixture
async def dns() -> AsyncIterator[AuthoritativeDns]:
    async with dns_server() as server:
        yield server


def record(node: MemcachedProcess) -> SrvRecord:
    return (10, 5, node.port, "localhost.")


def target(node: MemcachedProcess) -> str:
    """The node as the SRV lookup names it (the target keeps its final dot)."""
    return f"localhost.:{node.port}"


def settings(refresh: float = 0.0) -> AltCacheSettings:
    return AltCacheSettings(srv=SRV, srv_refresh=refresh)


async def write_keys(store: MemcacheStore, count: int) -> list[str]:
    keys = [f"srv-{uuid.uuid4().hex[:10]}-{i}" for i in range(count)]
    await store.increment([Increment(key, 1, 60, False) for key in keys])
    await store.flush()
    return keys


def expected_node(key: str, listed: Sequence[MemcachedProcess]) -> MemcachedProcess:
    """The node gomemcache picks for ``key`` among ``listed`` (sorted by SRV target)."""
    ordered = sorted(listed, key=target)
    return ordered[zlib.crc32(key.encode()) % len(ordered)]


def assert_placed(
    keys: Sequence[str], listed: Sequence[MemcachedProcess], nodes: Sequence[MemcachedProcess]
) -> None:
    for key in keys:
        assert node_of(nodes, key) == {nodes.index(expected_node(key, listed)): b"1"}


async def lookups_after(dns: AuthoritativeDns, count: int) -> None:
    """Wait until ``count`` more lookups than now were asked: all but the last were answered
    and applied (the refresh asks again only after applying an answer)."""
    target_count = len(dns.questions) + count

    async def asked() -> bool:
        return len(dns.questions) >= target_count

    await eventually(asked, within=5, what=f"{count} more SRV lookups")


async def test_hosts_come_from_the_record_sorted_as_upstream_sorts_them(
    dns: AuthoritativeDns, memcached_nodes: list[MemcachedProcess]
) -> None:
    dns.srv[SRV] = [record(node) for node in sorted(memcached_nodes, key=target, reverse=True)]
    async with open_store(settings(), resolver=srv_resolver(dns.resolver())) as store:
        keys = await write_keys(store, 20)
    assert_placed(keys, memcached_nodes, memcached_nodes)
    assert dns.questions == [SRV]  # no refresh when ALTCACHE_SRV_REFRESH is 0


async def test_an_unknown_record_at_startup_fails_start(dns: AuthoritativeDns) -> None:
    async with open_store(settings(), resolver=srv_resolver(dns.resolver()), start=False) as store:
        with pytest.raises(BackendError, match=f"Unable to fetch servers from SRV: .*{SRV}"):
            await store.start()
    assert dns.questions == [SRV]


async def test_a_record_without_targets_at_startup_fails_start(dns: AuthoritativeDns) -> None:
    dns.srv[SRV] = []
    async with open_store(settings(), resolver=srv_resolver(dns.resolver()), start=False) as store:
        with pytest.raises(BackendError, match=r"Unable to fetch servers from SRV: .*answer"):
            await store.start()


async def test_refresh_follows_a_changed_record(
    dns: AuthoritativeDns, memcached_nodes: list[MemcachedProcess], caplog: pytest.LogCaptureFixture
) -> None:
    first, second = memcached_nodes
    dns.srv[SRV] = [record(first)]
    with caplog.at_level(logging.INFO, logger=LOGGER):
        async with open_store(settings(REFRESH), resolver=srv_resolver(dns.resolver())) as store:
            assert_placed(await write_keys(store, 10), [first], memcached_nodes)

            dns.srv[SRV] = [record(first), record(second)]
            await lookups_after(dns, 2)
            assert_placed(await write_keys(store, 20), memcached_nodes, memcached_nodes)

            dns.srv[SRV] = [record(second)]
            await lookups_after(dns, 2)
            assert_placed(await write_keys(store, 10), [second], memcached_nodes)
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    both = ", ".join(sorted(target(node) for node in memcached_nodes))
    assert f"memcache hosts from SRV {SRV}: {both}" in infos
    assert f"memcache hosts from SRV {SRV}: {target(second)}" in infos


async def test_a_failed_refresh_keeps_the_previous_hosts(
    dns: AuthoritativeDns, memcached_nodes: list[MemcachedProcess], caplog: pytest.LogCaptureFixture
) -> None:
    dns.srv[SRV] = [record(node) for node in memcached_nodes]
    with caplog.at_level(logging.INFO, logger=LOGGER):
        async with open_store(settings(REFRESH), resolver=srv_resolver(dns.resolver())) as store:
            dns.failing = True  # SERVFAIL
            await lookups_after(dns, 2)
            assert_placed(await write_keys(store, 20), memcached_nodes, memcached_nodes)

            dns.failing = False
            del dns.srv[SRV]  # NXDOMAIN
            await lookups_after(dns, 2)
            assert_placed(await write_keys(store, 20), memcached_nodes, memcached_nodes)

            dns.srv[SRV] = [record(memcached_nodes[0])]  # answers again: followed again
            await lookups_after(dns, 2)
            assert_placed(await write_keys(store, 10), memcached_nodes[:1], memcached_nodes)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) >= 2
    for warning in warnings:
        assert warning.startswith("failed to refresh memcache hosts: SRV lookup of " + SRV)
        assert warning.endswith("keeping 2 hosts")
