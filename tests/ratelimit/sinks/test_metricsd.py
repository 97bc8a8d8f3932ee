"""The push sinks against a real UDP receiver: plain statsd and DogStatsD with mogrifiers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from handlers.ratelimit.settings import Settings
from handlers.ratelimit.sinks import create_sink
from handlers.ratelimit.sinks.flusher import StatsFlusher
from handlers.ratelimit.sinks.sources import LocalStats
from handlers.ratelimit.stats import ServiceStats
from tests.ratelimit.conftest import Harness, descriptor, harness, request
from tests.ratelimit.sinks.udp import UdpReceiver, udp_receiver

RULES = """
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: path
    value: /login
    descriptors:
      - key: user
        rate_limit: {unit: second, requests_per_unit: 5}
"""
PREFIX = "ratelimit.service.rate_limit.edge.remote_address."


@pytest.fixture
def receiver() -> Iterator[UdpReceiver]:
    with udp_receiver() as r:
        yield r


@contextmanager
def flushing(stats: ServiceStats, env: dict[str, str], port: int) -> Iterator[StatsFlusher]:
    """A flusher into the sink the settings ``env`` choose, pushing to ``port``."""
    settings = Settings.from_env({"METRICSD_HOST": "127.0.0.1", "METRICSD_PORT": str(port), **env})
    sink = create_sink(settings.stats)
    assert sink is not None
    try:
        yield StatsFlusher(LocalStats(stats.store), sink)
    finally:
        sink.close()


async def hit(h: Harness, times: int, *entries: tuple[str, str]) -> None:
    for _ in range(times):
        await h.service.should_rate_limit(
            request("edge", descriptor(*(entries or (("remote_address", "10.0.0.1"),))))
        )


async def test_counters_go_as_deltas_gauges_as_values_timers_in_ms(
    receiver: UdpReceiver,
) -> None:
    h = harness(RULES)
    with flushing(h.stats, {}, receiver.port) as flusher:
        await hit(h, 3)
        h.stats.store.gauge("ratelimit.redis_pool.cx_active").set(4)
        h.stats.store.timer("ratelimit_server.ShouldRateLimit.response_time").record(1.5)
        h.stats.store.timer("ratelimit_server.ShouldRateLimit.response_time").record(0.25)
        flusher.flush()
        assert sorted(receiver.lines(7)) == [
            "ratelimit.redis_pool.cx_active:4|g",
            f"{PREFIX}near_limit:1|c",
            f"{PREFIX}over_limit:1|c",
            f"{PREFIX}total_hits:3|c",
            f"{PREFIX}within_limit:2|c",
            "ratelimit_server.ShouldRateLimit.response_time:0.25|ms",
            "ratelimit_server.ShouldRateLimit.response_time:1.5|ms",
        ]
        await hit(h, 1)
        flusher.flush()  # only what changed, and every gauge again
        assert sorted(receiver.lines(3)) == [
            "ratelimit.redis_pool.cx_active:4|g",
            f"{PREFIX}over_limit:1|c",
            f"{PREFIX}total_hits:1|c",
        ]
        flusher.close()
        assert sorted(receiver.lines(1)) == ["ratelimit.redis_pool.cx_active:4|g"]
        assert receiver.nothing_more()


async def test_extra_tags_are_part_of_plain_statsd_names(receiver: UdpReceiver) -> None:
    h = harness(RULES)
    with flushing(h.stats, {"EXTRA_TAGS": "zone:eu.west-1,app:rl"}, receiver.port) as flusher:
        await hit(h, 1)
        flusher.flush()
        assert sorted(receiver.lines(2)) == [
            f"{PREFIX}total_hits.__app=rl.__zone=eu_west-1:1|c",
            f"{PREFIX}within_limit.__app=rl.__zone=eu_west-1:1|c",
        ]


MOGRIFIED = {
    "USE_METRICSD": "false",
    "USE_TAGGED_METRICSD": "true",
    "TAGGED_METRICSD_MOGRIFIERS": "NESTED,RULE",
    "TAGGED_METRICSD_MOGRIFIER_NESTED_PATTERN": (
        r"^ratelimit\.service\.rate_limit\.([^.]+)\.([^.]+)\.([^.]+)\.(\w+)$"
    ),
    "TAGGED_METRICSD_MOGRIFIER_NESTED_NAME": "ratelimit.service.rate_limit.$4",
    "TAGGED_METRICSD_MOGRIFIER_NESTED_TAGS": "domain:$1,key1:$2,key2:$3",
    "TAGGED_METRICSD_MOGRIFIER_RULE_PATTERN": r"^ratelimit\.service\.rate_limit\.(.*)\.(.*)\.(.*)$",
    "TAGGED_METRICSD_MOGRIFIER_RULE_NAME": "ratelimit.service.rate_limit.$3",
    "TAGGED_METRICSD_MOGRIFIER_RULE_TAGS": "domain:$1,descriptor:$2",
}


async def test_tagged_sink_mogrifies_names_into_tags(receiver: UdpReceiver) -> None:
    h = harness(RULES)
    with flushing(h.stats, MOGRIFIED, receiver.port) as flusher:
        await hit(h, 1)
        await hit(h, 1, ("path", "/login"), ("user", "bob"))
        h.stats.store.timer("ratelimit_server.ShouldRateLimit.response_time").record(2.0)
        flusher.flush()
        assert sorted(receiver.lines(5)) == [
            "ratelimit.service.rate_limit.total_hits:1|c|#domain:edge,descriptor:remote_address",
            "ratelimit.service.rate_limit.total_hits:1|c|#domain:edge,key1:path_/login,key2:user",
            "ratelimit.service.rate_limit.within_limit:1|c|#domain:edge,descriptor:remote_address",
            "ratelimit.service.rate_limit.within_limit:1|c|#domain:edge,key1:path_/login,key2:user",
            "ratelimit_server.ShouldRateLimit.response_time:2.0|ms",
        ]


async def test_tagged_sink_puts_extra_tags_first(receiver: UdpReceiver) -> None:
    h = harness(RULES)
    env = {**MOGRIFIED, "EXTRA_TAGS": "zone:eu.west,app:rl"}
    with flushing(h.stats, env, receiver.port) as flusher:
        h.stats.store.counter("ratelimit.service.config_load_success").add(2)
        await hit(h, 1)
        flusher.flush()
        assert sorted(receiver.lines(3)) == [
            "ratelimit.service.config_load_success:2|c|#app:rl,zone:eu_west",
            "ratelimit.service.rate_limit.total_hits:1|c"
            "|#app:rl,zone:eu_west,domain:edge,descriptor:remote_address",
            "ratelimit.service.rate_limit.within_limit:1|c"
            "|#app:rl,zone:eu_west,domain:edge,descriptor:remote_address",
        ]
