"""Issue 23 on real memcached: every limit that is not upstream's fixed window is decided by
``algorithms.py`` in a ``gets`` + ``cas`` loop (``MemcacheStore.decide``), with the same answers
as the reference under a controlled clock, exactly the model's admissions with several
processes on one key, a clear error when the key keeps changing, through a restart, and with
the expirations the decisions ask for. A fixed window of whole seconds that is not one unit is
upstream's counting (``incr``) under a key of its own, as on Redis."""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, cast

import pytest

from handlers.ratelimit import algorithms
from handlers.ratelimit.backends import memcache
from handlers.ratelimit.backends.base import AlgorithmStore, BackendError, LimitCheck
from handlers.ratelimit.backends.memcache import EXPIRY_MARGIN_MS, MemcacheStore
from handlers.ratelimit.config.provider import FileConfigProvider
from handlers.ratelimit.server import RateLimitServer
from handlers.ratelimit.settings import AltCacheSettings, Settings
from handlers.ratelimit.stats import StatsStore
from tests.ratelimit.conftest import Clock, descriptor, harness, request
from tests.ratelimit.memcached_servers import (
    MemcachedProcess,
    SettledStore,
    node_of,
    open_store,
    store_settings,
    ttl,
)
from tests.ratelimit.redis_servers import eventually
from tests.ratelimit.server_process import running
from tests.ratelimit.test_algorithm_rules import MODELLED, decides_as_the_algorithms, rule
from tests.ratelimit.test_algorithm_rules_redis import RULES, compare_with_reference, reference
from tests.ratelimit.test_server import runtime

T0 = 1_699_920_000.0  # a whole day


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemcachedProcess]:
    with running(MemcachedProcess(tmp_path_factory.mktemp("memcached"))) as process:
        yield process


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[MemcachedProcess]]:
    """Two nodes, so that keys are spread by the store's CRC-32 selection."""
    with (
        running(MemcachedProcess(tmp_path_factory.mktemp("memcached-a"))) as first,
        running(MemcachedProcess(tmp_path_factory.mktemp("memcached-b"))) as second,
    ):
        yield [first, second]


def flush_all(processes: Sequence[MemcachedProcess]) -> None:
    for process in processes:
        client = process.client()
        try:
            client.flush_all(noreply=False)
        finally:
            client.close()


class SettledAlgorithmStore(SettledStore):
    """:class:`SettledStore` (increments applied before the call returns, so that upstream's
    counting of a multiplied fixed window matches the model) that also decides."""

    store: MemcacheStore

    async def decide(
        self, checks: Sequence[LimitCheck], now_ms: int
    ) -> list[algorithms.Decision[Any]]:
        return await self.store.decide(checks, now_ms)


# --- the service ---------------------------------------------------------------------------------


@pytest.fixture
async def service(tmp_path: Path, node: MemcachedProcess) -> AsyncIterator[RateLimitServer]:
    env = {
        **runtime(tmp_path, RULES),
        "BACKEND_TYPE": "memcache",
        "ALTCACHE_HOST_PORT": node.address,
        "CACHE_KEY_PREFIX": f"{tmp_path.name}:",
        "EXPIRATION_JITTER_MAX_SECONDS": "0",
        "DISABLE_STATS": "true",
    }
    running = RateLimitServer(Settings.from_env(env), clock=Clock(T0 + 25))
    await running.store.start()
    provider = running.provider
    assert isinstance(provider, FileConfigProvider)
    assert (await provider.reload()).error is None  # memcached refused these rules before
    try:
        yield running
    finally:
        await running.store.close()


async def test_the_service_loads_and_decides_the_new_limits_on_memcached(
    service: RateLimitServer, node: MemcachedProcess
) -> None:
    """The Redis test's rules with BACKEND_TYPE=memcache: the multiplied fixed windows are
    counted as upstream's (``incr``, the expiration their window), the others decided in the
    gets/cas loop, with the same answers and stored values as on Redis."""
    decide = service.service.should_rate_limit
    store = service.store
    assert isinstance(store, MemcacheStore)
    thirty = []
    for _ in range(3):
        status = (await decide(request("edge", descriptor(("thirty", "a"))))).statuses[0]
        thirty.append((status.code, status.limit_remaining, status.duration_until_reset.seconds))
        await store.flush()  # the increments are applied after the answer, as upstream's
    assert thirty == [(1, 1, 5), (1, 0, 5), (2, 0, 5)]
    sliding = []
    for _ in range(3):
        status = (await decide(request("edge", descriptor(("sliding", "s"))))).statuses[0]
        sliding.append((status.code, status.limit_remaining, status.duration_until_reset.seconds))
    assert sliding == [(1, 1, 2), (1, 0, 2), (2, 0, 2)]
    both = []
    for _ in range(3):
        status = (await decide(request("edge", descriptor(("both", "b"))))).statuses[0]
        both.append((status.code, status.limit_remaining, status.current_limit.requests_per_unit))
    assert both == [(1, 0, 1), (2, 0, 1), (2, 0, 5)]
    prefix = service.settings.cache_key_prefix
    start, start_ms = int(T0), int(T0 + 25) * 1000
    held = {
        name: node_of([node], prefix + name).get(0)
        for name in (
            f"edge_thirty_a_fw30000_{start}",
            "edge_sliding_s_sw1000",
            "edge_both_b_fw500",
            "edge_both_b_tb60000.1",
        )
    }
    assert held == {
        f"edge_thirty_a_fw30000_{start}": b"3",
        "edge_sliding_s_sw1000": b"%d:2:0" % start_ms,
        "edge_both_b_fw500": b"%d:3" % start_ms,
        "edge_both_b_tb60000.1": b"%d:0" % (start_ms + 24000),
    }
    left = ttl(node, f"{prefix}edge_thirty_a_fw30000_{start}")
    assert left is not None and 0 < left <= 30


# --- the store ------------------------------------------------------------------------------------


def test_the_store_is_an_algorithm_store(node: MemcachedProcess) -> None:
    """What the limiter checks before it hands the store issue 23's limits."""
    assert isinstance(MemcacheStore(store_settings([node])), AlgorithmStore)


# --- the decisions against algorithms.py ----------------------------------------------------------


async def test_memcache_store_decides_as_the_algorithms(nodes: list[MemcachedProcess]) -> None:
    """Random requests of one to four limits (every algorithm, limits up to a million per
    second and a burst of 142,000 per year, hits up to 2**40), under a clock that jumps
    across windows and onto their boundaries: every field equals ``algorithms.py``'s."""
    flush_all(nodes)
    async with open_store(store_settings(nodes)) as store:
        await compare_with_reference(cast(Any, store), "mc-single", 1500)
        assert store.rounds[0] == 0
    held = [node_of(nodes, f"mc-single:{index}") for index in range(12)]
    assert {index for placed in held for index in placed} == {0, 1}  # both nodes hold keys


@pytest.mark.parametrize("name", list(MODELLED))
async def test_memcache_decides_the_rules_as_the_algorithms(
    name: str, node: MemcachedProcess
) -> None:
    """The memory backend's scenarios (test_algorithm_rules.py) through the service."""
    flush_all([node])
    h = harness(rule(MODELLED[name][0]), now=T0)
    async with open_store(store_settings([node])) as store:
        h.service.limiter.store = SettledAlgorithmStore(store)
        await decides_as_the_algorithms(h, name, steps=250)


async def test_checks_on_one_key_in_one_call_are_decided_in_order(node: MemcachedProcess) -> None:
    """Two checks on one key in a call (two descriptors with the same key) and many calls on
    one key at once: decided one after the other, as the model, in few rounds."""
    flush_all([node])
    now_ms = 1_700_000_000_123
    check = LimitCheck("order:sw", "sliding_window", 30, 1000, 0, 1)
    async with open_store(store_settings([node])) as store:
        pair = await store.decide([check, check._replace(hits=2)], now_ms)
        calls = await asyncio.gather(*(store.decide([check], now_ms) for _ in range(40)))
        assert sum(store.rounds) <= 4  # 41 calls: the first round, then the rest shared
    state: Any = None
    expected = []
    for hits in [1, 2] + [1] * 40:
        decision = reference(check._replace(hits=hits), state, now_ms)
        state = decision.state
        expected.append(decision[1:])
    assert [d[1:] for d in pair] + [call[0][1:] for call in calls] == expected
    assert [call[0].over_limit for call in calls].count(False) == 27


# --- several processes on one key ----------------------------------------------------------------


def _hammer(address: str, now_ms: int, workers: int, each: int) -> tuple[int, int, list[int], int]:
    """One process: ``workers`` concurrent loops of ``each`` single-hit requests, one after
    the other, on the shared sliding-window key and token-bucket key; returns how many of each
    were admitted, the store's rounds per batch, and the calls that failed."""

    async def run() -> tuple[int, int, list[int], int]:
        sliding = LimitCheck("hammer:sw", "sliding_window", 1200, 60_000, 0, 1)
        bucket = LimitCheck("hammer:tb", "token_bucket", 10, 60_000, 1000, 1)
        admitted = [0, 0]
        failed = 0
        async with open_store(AltCacheSettings(host_port=(address,)), timeout=2.0) as store:

            async def loop() -> None:
                nonlocal failed
                for _ in range(each):
                    try:
                        decisions = await store.decide([sliding, bucket], now_ms)
                    except BackendError:
                        failed += 1
                        continue
                    admitted[0] += not decisions[0].over_limit
                    admitted[1] += not decisions[1].over_limit

            await asyncio.gather(*(loop() for _ in range(workers)))
            rounds = list(store.rounds)
        return admitted[0], admitted[1], rounds, failed

    return asyncio.run(run())


async def test_processes_hammering_one_key_admit_exactly_the_model(
    node: MemcachedProcess,
) -> None:
    """Four processes, each with eight requests in flight at all times, on one sliding-window
    key (200 of 1200 already admitted) and one token-bucket key (burst 1000) at one instant:
    exactly what the model admits one request after the other (a lost update would admit
    more), with no call failing for want of rounds."""
    flush_all([node])
    client = node.client()
    try:
        assert client.set("hammer:sw", b"1699999980000:200:0", expire=60, noreply=False)
    finally:
        client.close()
    now_ms = 1_700_000_000_000  # 20 s into the minute of that state
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(4, mp_context=context) as pool:
        loop = asyncio.get_running_loop()
        results = await asyncio.gather(
            *(loop.run_in_executor(pool, _hammer, node.address, now_ms, 8, 200) for _ in range(4))
        )
    assert sum(result[0] for result in results) == 1000  # 6400 requests
    assert sum(result[1] for result in results) == 1000
    assert sum(result[3] for result in results) == 0
    rounds = [sum(result[2][i] for result in results) for i in range(memcache.CAS_ATTEMPTS + 1)]
    print(f"batches by rounds taken (index 0: failed): {rounds}")
    assert rounds[0] == 0
    assert node_of([node], "hammer:sw") == {0: b"1699999980000:1200:0"}


async def test_a_key_that_keeps_changing_fails_with_a_clear_error(
    node: MemcachedProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one round allowed, two stores (two processes) deciding on one key at once: the
    one whose ``cas`` loses fails, naming the key and the rounds; the other is decided."""
    monkeypatch.setattr(memcache, "CAS_ATTEMPTS", 1)
    check = LimitCheck("contended:tb", "token_bucket", 1000, 1000, 1000, 1)
    settings = store_settings([node])
    stats = StatsStore()
    async with open_store(settings) as first, open_store(settings, stats=stats) as second:
        for attempt in range(200):
            outcomes = await asyncio.gather(
                first.decide([check], 1_700_000_000_000 + attempt),
                second.decide([check], 1_700_000_000_000 + attempt),
                return_exceptions=True,
            )
            errors = [o for o in outcomes if isinstance(o, BaseException)]
            if errors:
                break
        assert len(errors) == 1, "no lost cas in 200 tries"
        assert isinstance(errors[0], BackendError)
        assert str(errors[0]) == (
            f"memcached {node.address}: key contended:tb was changed by other processes "
            "between the read and the write of each of 1 gets/cas rounds; not decided"
        )
        assert first.rounds[0] + second.rounds[0] == 1
    assert stats.value("ratelimit.memcache.cas.__code=conflict") == (1 if second.rounds[0] else 0)


# --- a restart -----------------------------------------------------------------------------------


async def test_a_restarted_memcached_decides_from_scratch(tmp_path: Path) -> None:
    """State lives in memcached only: a restart loses it. The calls on the connection the
    restart closed fail (BackendError: answered UNKNOWN); the next ones reconnect and decide
    as on a missing key, so a key's allowance starts whole again (up to one extra allowance
    admitted across the restart)."""
    with running(MemcachedProcess(tmp_path / "memcached")) as server:
        checks = [
            LimitCheck("restart:sw", "sliding_window", 3, 60_000, 0, 1),
            LimitCheck("restart:tb", "token_bucket", 1, 60_000, 2, 1),
        ]
        now_ms = 1_700_000_000_000
        async with open_store(store_settings([server]), timeout=1.0) as store:
            before = [await store.decide(checks, now_ms) for _ in range(4)]
            assert [[d.over_limit for d in ds] for ds in before] == [
                [False, False],
                [False, False],
                [False, True],
                [True, True],
            ]
            server.stop()
            with pytest.raises(BackendError, match=f"memcached {server.address}"):
                await store.decide(checks, now_ms)
            server.start()  # same port, empty

            async def decided() -> list[algorithms.Decision[Any]] | None:
                try:
                    return await store.decide(checks, now_ms)
                except BackendError:  # the connection the restart closed
                    return None

            after = await eventually(decided, what="a decision after the restart")
            assert [d[1:] for d in after] == [reference(c, None, now_ms)[1:] for c in checks]


# --- keys, values and expirations ----------------------------------------------------------------


async def test_values_and_expirations(node: MemcachedProcess) -> None:
    """The state encodings of the Redis script, kept ``ttl_ms`` + the margin rounded up to
    whole seconds; past 30 days as the Unix time it means (memcached's rule); past what
    memcached's int32 can say (2038), without expiry."""
    flush_all([node])
    now_ms = 1_700_000_000_250  # 250 ms into a second
    checks = [
        LimitCheck("kv:sw", "sliding_window", 5, 1000, 0, 2),
        LimitCheck("kv:tb", "token_bucket", 3, 1000, 3, 2),
        LimitCheck("kv:fw", "fixed_window", 3, 500, 0, 1),
        LimitCheck("kv:tb0", "token_bucket", 0, 1000, 3, 1),
        LimitCheck("kv:day", "sliding_window", 9, 86_400_000, 0, 1),
        LimitCheck("kv:year", "token_bucket", 1, 31_536_000_000, 3, 2),
        LimitCheck("kv:ages", "token_bucket", 1, 31_536_000_000, 142_000, 100_000),
    ]
    async with open_store(store_settings([node])) as store:
        decisions = await store.decide(checks, now_ms)
    year = 31_536_000_000
    assert [d[1:] for d in decisions] == [reference(c, None, now_ms)[1:] for c in checks]
    ttls = [d.ttl_ms for d in decisions]
    assert ttls[:4] + ttls[5:] == [1750, 667, 250, 0, 2 * year, 100_000 * year]
    values = {check.key: node_of([node], check.key).get(0) for check in checks}
    assert values == {
        "kv:sw": b"1700000000000:2:0",
        "kv:tb": b"%d:2" % (now_ms + 666),  # TAT = now + 2 * 1000/3 ms
        "kv:fw": b"1700000000000:1",
        "kv:tb0": None,
        "kv:day": b"1699920000000:1:0",
        "kv:year": b"%d:0" % (now_ms + 2 * year),
        "kv:ages": b"%d:0" % (now_ms + 100_000 * year),
    }
    kept = {check.key: decision.ttl_ms for check, decision in zip(checks, decisions, strict=True)}
    for key in ("kv:sw", "kv:tb", "kv:fw", "kv:day"):
        seconds = -(-(kept[key] + EXPIRY_MARGIN_MS) // 1000)
        left = ttl(node, key)
        assert left is not None and seconds - 1 <= left <= seconds, (key, left)
    left = ttl(node, "kv:year")  # 2 years: sent as a Unix time, not read as one in 1972
    assert left is not None and abs(left - (2 * year + EXPIRY_MARGIN_MS) // 1000) <= 2
    assert ttl(node, "kv:ages") == -1  # past 2038: kept until evicted


async def test_peek_decides_on_the_stored_state_and_stores_nothing(
    nodes: list[MemcachedProcess],
) -> None:
    """The counters API's read: each check (0 hits) decided on its key's value, as the model
    on the same state; nothing is written, a missing key stays missing."""
    flush_all(nodes)
    now_ms = 1_700_000_000_400
    checks = [
        LimitCheck("peek:sw", "sliding_window", 5, 1000, 0, 3),
        LimitCheck("peek:tb", "token_bucket", 4, 1000, 4, 2),
        LimitCheck("peek:fw", "fixed_window", 3, 500, 0, 1),
    ]
    missing = LimitCheck("peek:none", "token_bucket", 4, 1000, 4, 0)
    async with open_store(store_settings(nodes)) as store:
        decided = await store.decide(checks, now_ms)
        before = {check.key: node_of(nodes, check.key) for check in checks}
        reads = [check._replace(hits=0) for check in [*checks, missing]]
        peeked = await store.peek(reads, now_ms + 100)
        assert await store.peek([], now_ms) == []
    states = [decision.state for decision in decided] + [None]
    expected = [
        reference(read, state, now_ms + 100)[1:] for read, state in zip(reads, states, strict=True)
    ]
    assert [d[1:] for d in peeked] == expected
    assert {check.key: node_of(nodes, check.key) for check in checks} == before
    assert node_of(nodes, "peek:none") == {}


async def test_an_unchanged_state_is_not_written_again(node: MemcachedProcess) -> None:
    """A refused token-bucket request, or a check of 0 hits, leaves the state as it is: it is
    read, not written (the key keeps its CAS unique and its expiration)."""
    flush_all([node])
    now_ms = 1_700_000_000_000
    check = LimitCheck("quiet:tb", "token_bucket", 1, 60_000, 1, 1)
    async with open_store(store_settings([node])) as store:
        assert not (await store.decide([check], now_ms))[0].over_limit
        unique = _cas_unique(node, "quiet:tb")
        for hits in (1, 1, 0):
            await store.decide([check._replace(hits=hits)], now_ms + 5)
        assert _cas_unique(node, "quiet:tb") == unique


async def test_a_value_that_is_not_a_state_decides_as_missing_and_is_replaced(
    node: MemcachedProcess, caplog: pytest.LogCaptureFixture
) -> None:
    flush_all([node])
    client = node.client()
    try:
        assert client.set("junk:sw", b"not a state", expire=60, noreply=False)
    finally:
        client.close()
    check = LimitCheck("junk:sw", "sliding_window", 5, 1000, 0, 1)
    now_ms = 1_700_000_000_000
    async with open_store(store_settings([node])) as store:
        (decision,) = await store.decide([check], now_ms)
    assert decision[1:] == reference(check, None, now_ms)[1:]
    assert node_of([node], "junk:sw") == {0: b"1700000000000:1:0"}
    assert "Unexpected sliding_window state in memcached for key junk:sw" in caplog.text


async def test_malformed_keys_fail_before_anything_is_sent(node: MemcachedProcess) -> None:
    async with open_store(store_settings([node])) as store:
        good = LimitCheck("fine:sw", "sliding_window", 5, 1000, 0, 1)
        with pytest.raises(BackendError, match="malformed: key is too long"):
            await store.decide([good, good._replace(key="with space")], 1_700_000_000_000)
        assert sum(store.rounds) == 0


def _cas_unique(node: MemcachedProcess, key: str) -> int:
    client = node.client()
    try:
        _, unique = client.gets(key)
    finally:
        client.close()
    return int(unique)
