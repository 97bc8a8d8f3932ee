"""Nodes from an SRV record (``ALTCACHE_SRV``), refreshed every ``ALTCACHE_SRV_REFRESH``.

No DNS server is available to the tests, so the lookup is an injected resolver function; the
nodes it names are real memcached processes, and where keys land is read from them directly.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import zlib
from collections.abc import Sequence

import dns.resolver
import pytest

from handlers.ratelimit.backends.base import BackendError, Increment
from handlers.ratelimit.settings import AltCacheSettings
from tests.ratelimit.memcached_servers import MemcachedProcess, memcached_nodes, node_of, open_store

__all__ = ["memcached_nodes"]  # the fixture

SRV = "_memcache._tcp.ratelimit.test"


class ScriptedResolver:
    """Answers each lookup with the next scripted answer (the last one repeats): a list of
    ``target:port`` strings, or an exception to raise."""

    def __init__(self, *answers: Sequence[str] | Exception) -> None:
        self._answers = list(answers)
        self.lookups: list[str] = []

    async def __call__(self, name: str) -> Sequence[str]:
        self.lookups.append(name)
        answer = self._answers.pop(0) if len(self._answers) > 1 else self._answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def addresses(nodes: Sequence[MemcachedProcess]) -> list[str]:
    return [node.address for node in nodes]


async def test_targets_are_sorted_as_upstream_sorts_them(
    memcached_nodes: list[MemcachedProcess],
) -> None:
    ordered = sorted(addresses(memcached_nodes))
    resolver = ScriptedResolver(list(reversed(ordered)))
    settings = AltCacheSettings(srv=SRV)
    async with open_store(settings, resolver=resolver) as store:
        keys = [f"srv-{uuid.uuid4().hex[:10]}-{i}" for i in range(20)]
        await store.increment([Increment(key, 1, 60, False) for key in keys])
        await store.flush()
    by_address = {node.address: index for index, node in enumerate(memcached_nodes)}
    for key in keys:
        expected = by_address[ordered[zlib.crc32(key.encode()) % 2]]
        assert node_of(memcached_nodes, key) == {expected: b"1"}
    assert resolver.lookups == [SRV]


async def test_an_unresolvable_record_at_startup_fails_start() -> None:
    resolver = ScriptedResolver(dns.resolver.NXDOMAIN())  # type: ignore[no-untyped-call]
    async with open_store(AltCacheSettings(srv=SRV), resolver=resolver, start=False) as store:
        with pytest.raises(BackendError, match=f"Unable to fetch servers from SRV: .*{SRV}"):
            await store.start()


async def test_a_record_without_targets_at_startup_fails_start() -> None:
    async with open_store(
        AltCacheSettings(srv=SRV), resolver=ScriptedResolver([]), start=False
    ) as store:
        with pytest.raises(BackendError, match="found no targets"):
            await store.start()


async def test_refresh_follows_the_record_and_a_failed_refresh_keeps_the_list(
    memcached_nodes: list[MemcachedProcess], caplog: pytest.LogCaptureFixture
) -> None:
    first, second = memcached_nodes
    changed = asyncio.Event()
    answers: list[Sequence[str] | Exception] = [
        [first.address],
        dns.resolver.NoAnswer(),  # type: ignore[no-untyped-call]  # fails: keep [first]
        [first.address, second.address],
    ]
    resolver = ScriptedResolver(*answers)
    original = resolver.__call__

    async def lookup(name: str) -> Sequence[str]:
        try:
            return await original(name)
        finally:
            if len(resolver.lookups) >= 3:
                changed.set()

    settings = AltCacheSettings(srv=SRV, srv_refresh=0.05)
    with caplog.at_level(logging.INFO, logger="handlers.ratelimit.backends.memcache_servers"):
        async with open_store(settings, resolver=lookup) as store:
            before = [f"srv-{uuid.uuid4().hex[:10]}-{i}" for i in range(10)]
            await store.increment([Increment(key, 1, 60, False) for key in before])
            await store.flush()
            assert all(node_of(memcached_nodes, key) == {0: b"1"} for key in before)

            await asyncio.wait_for(changed.wait(), timeout=5)

            after = [f"srv-{uuid.uuid4().hex[:10]}-{i}" for i in range(20)]
            await store.increment([Increment(key, 1, 60, False) for key in after])
            await store.flush()
            ordered = sorted(addresses(memcached_nodes))
            index = {node.address: i for i, node in enumerate(memcached_nodes)}
            for key in after:
                expected = index[ordered[zlib.crc32(key.encode()) % 2]]
                assert node_of(memcached_nodes, key) == {expected: b"1"}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith("failed to refresh memcache hosts: SRV lookup of " + SRV)
    assert warnings[0].endswith("keeping 1 hosts")
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert f"memcache hosts from SRV {SRV}: {', '.join(ordered)}" in infos


async def test_no_refresh_when_the_interval_is_zero(
    memcached_nodes: list[MemcachedProcess],
) -> None:
    resolver = ScriptedResolver(addresses(memcached_nodes))
    async with open_store(AltCacheSettings(srv=SRV), resolver=resolver) as store:
        await store.increment([Increment(f"srv-{uuid.uuid4().hex}", 1, 60, False)])
        await store.flush()
    assert resolver.lookups == [SRV]
