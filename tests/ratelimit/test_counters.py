"""The counters API (issue 23): ``POST /counters`` reads the state of a request's limits
without counting, on the memory store and on real Redis, and ``ratelimit-client -counters``."""

from __future__ import annotations

import copy
import random
import textwrap
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2
from generated.ratelimit.client import AsyncRatelimitClient
from handlers.ratelimit.health import Health
from handlers.ratelimit.http import create_http_app
from tests.ratelimit.conftest import Harness, descriptor, harness, request
from tests.ratelimit.redis_servers import (  # noqa: F401
    RedisProcess,
    open_store,
    redis_server,
    store_settings,
)

T0 = 1_700_000_000.25

RULES = textwrap.dedent(
    """\
    domain: d
    descriptors:
      - key: fixed
        rate_limit: {unit: minute, requests_per_unit: 10, name: per_minute}
      - key: window30
        rate_limit: {window: 30s, requests_per_unit: 6}
      - key: sliding
        rate_limit: {unit: second, requests_per_unit: 5, algorithm: sliding_window}
      - key: bucket
        rate_limit: {unit: second, requests_per_unit: 4, algorithm: token_bucket, burst: 8}
      - key: two
        rate_limits:
          - {unit: second, requests_per_unit: 3, algorithm: token_bucket, burst: 3}
          - {unit: minute, requests_per_unit: 20, name: sustained}
      - key: free
        rate_limit: {unlimited: true}
      - key: shadow
        shadow_mode: true
        rate_limit: {unit: second, requests_per_unit: 1, algorithm: sliding_window}
      - key: replacer
        rate_limit: {unit: minute, requests_per_unit: 5, replaces: [{name: per_minute}]}
    """
)
KEYS = ["fixed", "window30", "sliding", "bucket", "two", "shadow"]


def one(key: str, hits: int | None = None) -> rls_pb2.RateLimitRequest:
    return request("d", descriptor((key, "v"), hits=hits))


async def read(h: Harness, *keys: str) -> list[tuple[str, Any]]:
    return await h.service.read_counters(request("d", *(descriptor((k, "v")) for k in keys)))


async def test_a_read_reports_each_limit_and_counts_nothing() -> None:
    h = harness(RULES, now=T0)
    for _ in range(3):
        await h.service.decide(one("fixed"))
    counters_before = copy.deepcopy(h.store.inner._counters)
    ((status, (reading,)),) = await read(h, "fixed")
    assert h.store.inner._counters == counters_before  # nothing counted
    assert status == "limited"
    assert (reading.used, reading.remaining, reading.deciding) == (3, 7, True)
    # the minute window of T0 ends at 1_700_000_040 s
    assert reading.reset_ms == 1_700_000_040_000 - int(T0 * 1000)
    assert reading.limit.name == "per_minute"
    decision = await h.service.decide(one("fixed"))
    assert decision.remaining == [6]  # the read did not count


async def test_an_untouched_limit_is_whole() -> None:
    """Whole: nothing used; a sliding window or bucket resets in 0, a fixed window at its end."""
    h = harness(RULES, now=T0)
    read_all = await read(h, *KEYS)
    for key, (status, readings) in zip(KEYS, read_all, strict=True):
        assert status == "limited", key
        for reading in readings:
            limit = reading.limit
            allowance = limit.burst or limit.requests_per_unit
            window_ms = limit.window_ms or limit.divider * 1000
            reset = (
                0 if limit.algorithm != "fixed_window" else window_ms - int(T0 * 1000) % window_ms
            )
            assert (reading.used, reading.remaining, reading.reset_ms) == (0, allowance, reset), key


async def test_statuses_without_limits() -> None:
    h = harness(RULES, now=T0)
    read_all = await h.service.read_counters(
        request(
            "d",
            descriptor(("free", "v")),
            descriptor(("nothing", "v")),
            descriptor(("fixed", "v")),
            descriptor(("replacer", "v")),
        )
    )
    statuses = [status for status, _ in read_all]
    assert statuses == ["unlimited", "no_limit", "no_limit", "limited"]  # fixed is replaced
    unknown = await h.service.read_counters(request("other", descriptor(("fixed", "v"))))
    assert unknown == [("no_limit", ())]


@pytest.mark.parametrize("key", KEYS)
async def test_a_read_is_what_a_check_of_0_hits_answers(key: str) -> None:
    """After random traffic under a controlled clock, every read matches the status a request
    of 0 hits gets (remaining, seconds until reset, the deciding limit) and changes nothing."""
    h = harness(RULES, now=T0)
    generator = random.Random(key)
    for _ in range(150):
        h.clock.now += generator.choice([0, 0, 0.05, 0.2, 0.7, 3, 31])
        await h.service.decide(one(key, hits=generator.choice([1, 1, 2, 3])))
        states = copy.deepcopy((h.store.inner._counters, h.store.inner._states))
        ((status, readings),) = await read(h, key)
        assert copy.deepcopy((h.store.inner._counters, h.store.inner._states)) == states
        check = (await h.service.decide(one(key, hits=0), message=True)).response
        assert check is not None
        (answer,) = check.statuses
        (deciding,) = [reading for reading in readings if reading.deciding]
        assert status == "limited"
        assert answer.limit_remaining == deciding.remaining, (key, h.clock.now)
        assert answer.current_limit.requests_per_unit == deciding.limit.requests_per_unit
        if not deciding.limit.advanced:  # upstream's window: its end, in whole seconds
            assert deciding.reset_ms <= answer.duration_until_reset.seconds * 1000
        else:
            assert answer.duration_until_reset.seconds == -(-deciding.reset_ms // 1000)
        for reading in readings:
            allowance = reading.limit.burst or reading.limit.requests_per_unit
            assert reading.used + reading.remaining == allowance
            assert reading.used >= 0 and reading.reset_ms >= 0


@pytest.fixture
async def client() -> AsyncIterator[tuple[AsyncRatelimitClient, Harness]]:
    h = harness(RULES, now=T0)
    transport = httpx.ASGITransport(app=create_http_app(h.service, Health()))
    async with AsyncRatelimitClient(base_url="http://rl", transport=transport) as api:
        yield api, h


async def test_the_generated_client_reads_counters(
    client: tuple[AsyncRatelimitClient, Harness],
) -> None:
    api, h = client
    for _ in range(2):
        await h.service.decide(one("two"))
    answer = await api.read_counters(
        {
            "domain": "d",
            "descriptors": [
                {"entries": [{"key": "two", "value": "v"}]},
                {"entries": [{"key": "free", "value": "v"}]},
            ],
            "hitsAddend": 5,  # ignored: nothing is counted
        }
    )
    two, free = answer.descriptors
    assert answer.domain == "d"
    assert (free.status.value, free.limits) == ("unlimited", [])
    bucket, sustained = two.limits
    assert (bucket.algorithm.value, bucket.burst, bucket.used, bucket.remaining) == (
        "token_bucket",
        3,
        2,
        1,
    )
    assert bucket.deciding and not sustained.deciding
    assert (sustained.name, sustained.unit.value, sustained.window_ms) == (
        "sustained",
        "MINUTE",
        60_000,
    )
    assert (sustained.used, sustained.remaining, sustained.burst) == (2, 18, None)
    again = await api.read_counters({"domain": "d", "descriptors": [{"entries": two_entries()}]})
    assert again.descriptors[0].limits[0].remaining == 1  # still: reads count nothing


def two_entries() -> list[dict[str, str]]:
    return [{"key": "two", "value": "v"}]


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b'{"domain": "", "descriptors": [{"entries": []}]}',
        b'{"domain": "d"}',
        b'{"domain": "d", "descriptors": [], "surprise": 1}',
        b'{"domain": "d", "descriptors": [{"entries": [{"key": 5}]}]}',
    ],
)
async def test_what_json_refuses_counters_refuses(
    client: tuple[AsyncRatelimitClient, Harness], body: bytes
) -> None:
    api, _ = client
    http = api._http  # the same app
    response = await http.post("/counters", content=body)
    assert (response.status_code, response.text) == (400, "Bad Request\n")


async def test_counters_takes_post_only(client: tuple[AsyncRatelimitClient, Harness]) -> None:
    api, _ = client
    response = await api._http.get("/counters")
    assert response.status_code == 405


async def test_redis_reads_what_it_decided(redis_server: RedisProcess) -> None:  # noqa: F811
    """The same reads on real Redis: the script's stored values decoded, nothing counted."""
    h = harness(RULES, now=T0)
    async with open_store(store_settings(redis_server.address)) as store:
        h.service.limiter.store = store
        for key in KEYS:
            for hits in (1, 2):
                await h.service.decide(one(key, hits=hits))
        memory = harness(RULES, now=T0)
        for key in KEYS:
            for hits in (1, 2):
                await memory.service.decide(one(key, hits=hits))
        for moment in (0.0, 0.3, 1.1, 29.0):
            h.clock.now = memory.clock.now = T0 + moment
            on_redis = await read(h, *KEYS)
            again = await read(h, *KEYS)
            in_memory = await read(memory, *KEYS)
            assert on_redis == again  # nothing counted
            flat = [
                [(r.used, r.remaining, r.reset_ms, r.deciding) for r in readings]
                for _, readings in on_redis
            ]
            expected = [
                [(r.used, r.remaining, r.reset_ms, r.deciding) for r in readings]
                for _, readings in in_memory
            ]
            assert flat == expected, moment
