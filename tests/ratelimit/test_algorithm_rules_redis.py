"""Issue 23 on a real Redis. Step 2: a fixed window of whole seconds that is not one unit
(``unit_multiplier``, ``window``) is upstream's counting under a key of its own. Step 3: every
other limit is decided by the Lua script of ``backends/redis.py`` (single and cluster), with
the same answers as ``algorithms.py`` under a controlled clock, atomically across processes,
and through lost scripts and a restart."""

from __future__ import annotations

import asyncio
import multiprocessing
import random
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from handlers.ratelimit import algorithms
from handlers.ratelimit.backends.base import BackendError, LimitCheck
from handlers.ratelimit.backends.redis import (
    DECIDE_SCRIPT,
    DECIDE_SHA,
    TTL_MARGIN_MS,
    RedisStore,
    _ClusterInstance,
)
from handlers.ratelimit.config.provider import FileConfigProvider
from handlers.ratelimit.server import RateLimitServer
from handlers.ratelimit.settings import Settings
from tests.ratelimit.conftest import Clock, descriptor, harness, request
from tests.ratelimit.redis_servers import (  # noqa: F401
    ClusterDeployment,
    RedisProcess,
    eventually,
    open_store,
    redis_cluster,
    redis_second_server,
    redis_server,
    running,
    store_settings,
)
from tests.ratelimit.test_algorithm_rules import MODELLED, decides_as_the_algorithms, rule
from tests.ratelimit.test_server import runtime

RULES = """\
domain: edge
descriptors:
  - key: thirty
    rate_limit: {unit: second, unit_multiplier: 30, requests_per_unit: 2}
  - key: ninety
    rate_limit: {window: 1m30s, requests_per_unit: 1}
  - key: sliding
    rate_limit: {unit: second, requests_per_unit: 2, algorithm: sliding_window}
  - key: both
    rate_limits:
      - {window: 500ms, requests_per_unit: 1}
      - {unit: minute, requests_per_unit: 5, algorithm: token_bucket, burst: 2}
"""
T0 = 1_699_920_000.0  # a whole day


@pytest.fixture
async def service(tmp_path: Path, redis_server: RedisProcess) -> AsyncIterator[RateLimitServer]:  # noqa: F811
    env = {
        **runtime(tmp_path, RULES),
        "BACKEND_TYPE": "redis",
        "KVSTORE_SOCKET_TYPE": "tcp",
        "KVSTORE_URL": redis_server.address,
        "KVSTORE_TIMEOUT": "1s",
        "CACHE_KEY_PREFIX": f"{tmp_path.name}:",
        "EXPIRATION_JITTER_MAX_SECONDS": "0",
        "DISABLE_STATS": "true",
    }
    running = RateLimitServer(Settings.from_env(env), clock=Clock(T0 + 25))
    await running.store.start()
    await _file_provider(running).reload()
    try:
        yield running
    finally:
        await running.store.close()


async def test_multiplied_fixed_windows_count_in_redis(
    service: RateLimitServer,
    redis_server: RedisProcess,  # noqa: F811
) -> None:
    assert service.service.rules is not None
    decide = service.service.should_rate_limit
    codes = []
    for _ in range(3):
        response = await decide(request("edge", descriptor(("thirty", "a"))))
        status = response.statuses[0]
        codes.append((status.code, status.limit_remaining, status.duration_until_reset.seconds))
    assert codes == [(1, 1, 5), (1, 0, 5), (2, 0, 5)]
    assert response.statuses[0].current_limit.unit == 0  # UNKNOWN: not one unit
    await decide(request("edge", descriptor(("ninety", "b"))))
    prefix = service.settings.cache_key_prefix
    start = int(T0)
    with redis_server.client() as client:
        assert client.get(f"{prefix}edge_thirty_a_fw30000_{start}") == "3"
        assert 0 < client.ttl(f"{prefix}edge_thirty_a_fw30000_{start}") <= 30
        assert client.get(f"{prefix}edge_ninety_b_fw90000_{start}") == "1"
        assert 30 < client.ttl(f"{prefix}edge_ninety_b_fw90000_{start}") <= 90
        assert client.get(f"{prefix}edge_thirty_a_{start}") is None


def _file_provider(server: RateLimitServer) -> FileConfigProvider:
    assert isinstance(server.provider, FileConfigProvider)
    return server.provider


# --- issue 23, step 3: Redis decides every algorithm (one EVALSHA per limit) --------------------


async def test_the_service_loads_and_decides_the_new_limits_on_redis(
    service: RateLimitServer,
    redis_server: RedisProcess,  # noqa: F811
) -> None:
    """Rules Redis refused at load in step 2 (a sliding window, several limits with a
    sub-second fixed window and a token bucket) load with BACKEND_TYPE=redis and are decided
    in Redis, under their tagged keys."""
    decide = service.service.should_rate_limit
    sliding = []
    for _ in range(3):
        status = (await decide(request("edge", descriptor(("sliding", "s"))))).statuses[0]
        sliding.append((status.code, status.limit_remaining, status.duration_until_reset.seconds))
    assert sliding == [(1, 1, 2), (1, 0, 2), (2, 0, 2)]  # retry: 1.5 s (half of 2 weighs)
    both = []
    for _ in range(3):
        status = (await decide(request("edge", descriptor(("both", "b"))))).statuses[0]
        both.append((status.code, status.limit_remaining, status.current_limit.requests_per_unit))
    # the 500 ms window is full from the second; the bucket (still counting) from the third
    assert both == [(1, 0, 1), (2, 0, 1), (2, 0, 5)]
    prefix = service.settings.cache_key_prefix
    start_ms = int(T0 + 25) * 1000
    with redis_server.client() as client:
        assert client.get(f"{prefix}edge_sliding_s_sw1000") == f"{start_ms}:2:0"
        assert client.get(f"{prefix}edge_both_b_fw500") == f"{start_ms}:3"
        assert client.get(f"{prefix}edge_both_b_tb60000.1") == f"{start_ms + 24000}:0"


async def test_short_windows_go_to_the_per_second_instance(
    redis_server: RedisProcess,  # noqa: F811
    redis_second_server: RedisProcess,  # noqa: F811
) -> None:
    checks = [
        LimitCheck("route:minute", "sliding_window", 5, 60_000, 0, 1),
        LimitCheck("route:second", "token_bucket", 5, 1000, 5, 1),
        LimitCheck("route:short", "fixed_window", 5, 500, 0, 1),
    ]
    now_ms = 1_700_000_000_000
    async with open_store(
        store_settings(redis_server.address),
        per_second=store_settings(redis_second_server.address),
    ) as store:
        decisions = await store.decide(checks, now_ms)
        # a read (the counters API) finds each state where it was written: 0 hits on top
        read = await store.peek([check._replace(hits=0) for check in checks], now_ms)
    assert [d[1:] for d in decisions] == [reference(c, None, now_ms)[1:] for c in checks]
    assert [d.limit_remaining for d in read] == [4, 4, 4]
    with redis_server.client() as main, redis_second_server.client() as second:
        assert [main.exists(check.key) for check in checks] == [1, 0, 0]
        assert [second.exists(check.key) for check in checks] == [0, 1, 1]


@pytest.mark.parametrize("name", list(MODELLED))
async def test_redis_decides_as_the_algorithms(
    name: str,
    redis_server: RedisProcess,  # noqa: F811
) -> None:
    """The memory backend's scenarios (test_algorithm_rules.py) through the service on Redis."""
    with redis_server.client() as client:
        client.flushall()
    h = harness(rule(MODELLED[name][0]), now=T0)
    async with open_store(store_settings(redis_server.address)) as store:
        h.service.limiter.store = store
        await decides_as_the_algorithms(h, name, steps=250)


@pytest.mark.parametrize("name", ["sliding 7 per 2500ms", "three limits"])
async def test_redis_cluster_decides_as_the_algorithms(
    name: str,
    redis_cluster: ClusterDeployment,  # noqa: F811
) -> None:
    h = harness(rule(MODELLED[name][0]), now=T0 + 7)
    async with open_store(store_settings(redis_cluster.url, type="cluster")) as store:
        h.service.limiter.store = store
        await decides_as_the_algorithms(h, name, steps=150)


CHECKS = [
    ("sliding_window", 5, 1000, 0),
    ("sliding_window", 7, 2500, 0),
    ("sliding_window", 100, 100, 0),
    ("sliding_window", 1000, 86_400_000, 0),
    ("token_bucket", 4, 1000, 4),
    ("token_bucket", 10, 60_000, 3),
    ("token_bucket", 1_000_000, 1000, 1_000_000),
    ("token_bucket", 3, 1000, 1),
    ("token_bucket", 1, 31_536_000_000, 142_000),
    ("token_bucket", 0, 1000, 5),
    ("fixed_window", 3, 500, 0),
    ("fixed_window", 7, 1500, 0),
]
"""(algorithm, limit, window_ms, burst): among them the largest products Lua's doubles must
keep exact (a day's sliding window, a million per second, a burst of 142,000 per year)."""


def reference(check: LimitCheck, state: Any, now_ms: int) -> algorithms.Decision[Any]:
    if check.algorithm == "sliding_window":
        return algorithms.sliding_window(state, now_ms, check.limit, check.window_ms, check.hits)
    if check.algorithm == "token_bucket":
        return algorithms.token_bucket(
            state, now_ms, check.limit, check.window_ms, check.hits, check.burst
        )
    return algorithms.fixed_window(state, now_ms, check.limit, check.window_ms, check.hits)


async def compare_with_reference(
    store: RedisStore, seed: str, steps: int, between: Callable[[int], None] | None = None
) -> None:
    """Random requests of one to four checks (distinct keys) under a clock that starts
    anywhere up to 2**41 ms and moves by 0-3 ms, onto a window boundary +-2 ms, or by up to a
    million windows of at most a minute (epochs stay far below 2**53); every field equals
    ``algorithms.py``'s. ``between(step)`` runs before
    each step (a restart, a SCRIPT FLUSH)."""
    generator = random.Random(seed)
    states: dict[str, Any] = {}
    now_ms = generator.randrange(1 << 41)
    seen = set()
    for step in range(steps):
        if between is not None:
            between(step)
        roll = generator.random()
        if roll < 0.05:
            now_ms += generator.randrange(1, 1_000_000) * min(generator.choice(CHECKS)[2], 60_000)
        elif roll < 0.2:
            window = generator.choice(CHECKS)[2]
            now_ms = (now_ms // window + 1) * window + generator.randrange(-2, 3)
        else:
            now_ms += generator.randrange(0, 4)
        chosen = generator.sample(range(len(CHECKS)), generator.randrange(1, 5))
        checks = [
            LimitCheck(
                f"{seed}:{index}",
                *CHECKS[index][:3],
                CHECKS[index][3],
                generator.choice([0, 1, 1, 1, 2, 3, 5, 1_000_001, 1 << 40]),
            )
            for index in chosen
        ]
        decisions = await store.decide(checks, now_ms)
        for check, decision in zip(checks, decisions, strict=True):
            expected = reference(check, states.get(check.key), now_ms)
            states[check.key] = expected.state
            assert decision[1:] == expected[1:], (seed, step, check, now_ms)
            seen.add((check.algorithm, decision.over_limit))
    assert len(seen) == 6  # every algorithm both admitted and refused


async def test_redis_store_decides_as_the_algorithms(
    redis_server: RedisProcess,  # noqa: F811
) -> None:
    async with open_store(store_settings(redis_server.address)) as store:
        await compare_with_reference(store, "single", 1500)


async def test_redis_cluster_store_decides_as_the_algorithms(
    redis_cluster: ClusterDeployment,  # noqa: F811
) -> None:
    def flush(step: int) -> None:  # the scripts lost on every node, twice
        if step in (300, 301):
            for node in redis_cluster.nodes:
                with node.client() as client:
                    client.script_flush()

    async with open_store(store_settings(redis_cluster.url, type="cluster")) as store:
        await compare_with_reference(store, "cluster", 600, flush)
        assert isinstance(store._main, _ClusterInstance)
        assert len(store._main.router.nodes) == 3
    for node in redis_cluster.nodes:
        with node.client() as client:
            assert client.script_exists(DECIDE_SHA) == [True]


async def test_lost_scripts_are_loaded_again(redis_server: RedisProcess) -> None:  # noqa: F811
    """``SCRIPT FLUSH`` (what a restart or a failover to a fresh replica does to scripts):
    the next decisions load the script again, transparently, and count nothing twice."""
    with redis_server.client() as client:
        client.script_flush()

        def flush(step: int) -> None:
            if step % 97 == 0:
                client.script_flush()

        async with open_store(store_settings(redis_server.address)) as store:
            await compare_with_reference(store, "flushed", 500, flush)
        assert client.script_exists(DECIDE_SHA) == [True]
        assert client.info("errorstats").get("errorstat_NOSCRIPT", {}).get("count", 0) >= 1


async def test_a_restarted_redis_gets_the_script_again(tmp_path: Path) -> None:
    with running(RedisProcess(tmp_path / "redis")) as server:
        check = LimitCheck("restart", "sliding_window", 3, 60_000, 0, 1)
        now_ms = 1_700_000_000_000
        async with open_store(store_settings(server.address, timeout=1.0)) as store:
            decisions = [(await store.decide([check], now_ms))[0] for _ in range(4)]
            assert [d.over_limit for d in decisions] == [False, False, False, True]
            server.stop()
            server.start()  # same port, empty: no keys, no scripts

            async def decided() -> algorithms.Decision[Any] | None:
                try:
                    return (await store.decide([check], now_ms))[0]
                except BackendError:  # the batch on the connection the restart closed
                    return None

            after = await eventually(decided, what="a decision after the restart")
            assert after[1:] == reference(check, None, now_ms)[1:]
            with server.client() as client:
                assert client.script_exists(DECIDE_SHA) == [True]


async def test_keys_values_and_ttls(redis_server: RedisProcess) -> None:  # noqa: F811
    """The state encodings of the design note, kept ``ttl_ms`` + the margin (PX)."""
    now_ms = 1_700_000_000_250  # 250 ms into a second
    checks = [
        LimitCheck("kv:sw", "sliding_window", 5, 1000, 0, 2),
        LimitCheck("kv:tb", "token_bucket", 3, 1000, 3, 2),
        LimitCheck("kv:fw", "fixed_window", 3, 500, 0, 1),
        LimitCheck("kv:tb0", "token_bucket", 0, 1000, 3, 1),
    ]
    with redis_server.client() as client:
        client.delete(*(check.key for check in checks))
        async with open_store(store_settings(redis_server.address)) as store:
            decisions = await store.decide(checks, now_ms)
        assert [d.ttl_ms for d in decisions] == [1750, 667, 250, 0]
        assert client.get("kv:sw") == "1700000000000:2:0"
        assert client.get("kv:tb") == f"{now_ms + 666}:2"  # TAT = now + 2 * 1000/3 ms
        assert client.get("kv:fw") == "1700000000000:1"
        assert client.exists("kv:tb0") == 0
        for key, ttl in (("kv:sw", 1750), ("kv:tb", 667), ("kv:fw", 250)):
            assert ttl + TTL_MARGIN_MS - 100 < client.pttl(key) <= ttl + TTL_MARGIN_MS


def _hammer(address: str, now_ms: int, attempts: int) -> tuple[int, int]:
    """One process: ``attempts`` concurrent single-hit requests on the shared sliding-window
    key and as many on the shared token-bucket key; returns how many of each were admitted."""

    async def run() -> tuple[int, int]:
        sliding = LimitCheck("hammer:sw", "sliding_window", 50, 60_000, 0, 1)
        bucket = LimitCheck("hammer:tb", "token_bucket", 10, 60_000, 20, 1)
        async with open_store(store_settings(address, pool_size=8)) as store:
            results = await asyncio.gather(
                *(store.decide([sliding, bucket], now_ms) for _ in range(attempts))
            )
        return (
            sum(not result[0].over_limit for result in results),
            sum(not result[1].over_limit for result in results),
        )

    return asyncio.run(run())


async def test_four_processes_never_admit_more_than_the_model(
    redis_server: RedisProcess,  # noqa: F811
) -> None:
    """Four processes (and many requests in flight in each) on one sliding-window key and one
    token-bucket key at one instant: exactly the limit and the burst are admitted, as the
    model of one request after the other says (a lost update would admit more)."""
    with redis_server.client() as client:
        client.delete("hammer:sw", "hammer:tb")
        client.set("hammer:sw", "1699999980000:30:0")  # 30 of 50 already admitted
    now_ms = 1_700_000_000_000  # 20 s into the minute of that state
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(4, mp_context=context) as pool:
        loop = asyncio.get_running_loop()
        counts = await asyncio.gather(
            *(
                loop.run_in_executor(pool, _hammer, redis_server.address, now_ms, 150)
                for _ in range(4)
            )
        )
    assert sum(count[0] for count in counts) == 20
    assert sum(count[1] for count in counts) == 20
    with redis_server.client() as client:
        assert client.get("hammer:sw") == "1699999980000:50:0"


def test_lua_division_is_exact_below_2_53(redis_server: RedisProcess) -> None:  # noqa: F811
    """The script's ``idiv`` / ``cdiv`` equal Python's ``//`` and ceiling division up to 2**53,
    where the products the decisions divide stay. (Below 2**53 the correctly rounded ``a / b``
    never crosses an integer: the gap to one is at least ``1 / b``, the rounding error below
    ``a / b * 2**-53 < 1 / b``; the correction by one is a guard, and this checks it changes
    nothing there.)"""
    helpers = DECIDE_SCRIPT.split("local key = KEYS[1]")[0]
    script = helpers + (
        "local a, b = tonumber(ARGV[1]), tonumber(ARGV[2])\nreturn {idiv(a, b), cdiv(a, b)}"
    )
    generator = random.Random("division")
    cases = [
        ((1 << 53) - 1, 1 << 26),
        ((1 << 53) - 2, (1 << 26) - 1),
        ((1 << 52) + 1, 3),
        ((1 << 53) - 1, (1 << 53) - 2),
        (4_503_599_627_370_495, 4_294_967_295),
        (0, 7),
        (-((1 << 53) - 1), 1 << 26),
    ]
    for _ in range(300):
        b = generator.randrange(1, 1 << generator.randrange(1, 53))
        q = generator.randrange(0, (1 << 53) // b)
        a = min(q * b + generator.choice([-1, 0, 1, b - 1]), (1 << 53) - 1)
        cases.append((generator.choice([a, -a]), b))
    with redis_server.client() as client:
        for a, b in cases:
            assert client.eval(script, 0, a, b) == [a // b, -(-a // b)], (a, b)
