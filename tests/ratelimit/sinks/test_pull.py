"""The pull endpoint scraped over HTTP, with the default mapping and with a mapper file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from handlers.ratelimit.settings import Settings, SettingsError
from handlers.ratelimit.sinks import StatsReporting
from handlers.ratelimit.sinks.pull_mapping import Mapper, MappingError
from tests.ratelimit.conftest import Harness, descriptor, harness, request

RULES = """
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: path
    value: /login
    descriptors:
      - key: user
        detailed_metric: true
        rate_limit: {unit: minute, requests_per_unit: 1}
"""


@asynccontextmanager
async def pulling(h: Harness, env: dict[str, str]) -> AsyncIterator[str]:
    """The pull endpoint of ``h``'s statistics on a free port; yields its URL."""
    settings = Settings.from_env(
        {"USE_PULLMETRICS": "true", "PULLMETRICS_ADDR": "127.0.0.1:0", **env}
    )
    reporting = StatsReporting(settings.stats, h.stats.store)
    await reporting.start()
    try:
        assert reporting.pull_listener is not None
        yield f"http://127.0.0.1:{reporting.pull_listener.port}{settings.stats.pullmetrics_path}"
    finally:
        await reporting.stop()


async def traffic(h: Harness) -> None:
    for _ in range(3):
        await h.service.should_rate_limit(
            request(
                "edge",
                descriptor(("remote_address", "10.0.0.1")),
                descriptor(("path", "/login"), ("user", "bob")),
            )
        )
    h.stats.config_load_success.add()
    h.stats.store.timer("ratelimit_server.ShouldRateLimit.response_time").record(7.0)
    h.stats.store.counter("ratelimit_server.ShouldRateLimit.total_requests").add(3)
    h.stats.store.gauge("ratelimit.redis_pool.cx_active").set(2)


def samples(text: str) -> set[str]:
    return {line for line in text.splitlines() if line and not line.startswith("#")}


async def test_default_mapping_names_and_labels() -> None:
    h = harness(RULES)
    async with pulling(h, {}) as url, httpx.AsyncClient() as client:
        await traffic(h)
        response = await client.get(url)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    assert "# TYPE ratelimit_service_rate_limit_over_limit counter\n" in text
    assert "# TYPE ratelimit_service_response_time_seconds histogram\n" in text
    got = samples(text)
    expected = {
        'ratelimit_service_rate_limit_total_hits{domain="edge",key1="remote_address"} 3.0',
        'ratelimit_service_rate_limit_over_limit{domain="edge",key1="remote_address"} 1.0',
        'ratelimit_service_rate_limit_near_limit{domain="edge",key1="remote_address"} 1.0',
        'ratelimit_service_rate_limit_within_limit{domain="edge",key1="remote_address"} 2.0',
        # detailed_metric: the upstream integration test's shape, 3 hits on a 1/min rule
        'ratelimit_service_rate_limit_over_limit{domain="edge",key1="path_/login",key2="user_bob"}'
        " 2.0",
        "ratelimit_service_config_load_success 1.0",
        'ratelimit_service_total_requests{grpc_method="ShouldRateLimit"} 3.0',
        'ratelimit_service_response_time_seconds_bucket{grpc_method="ShouldRateLimit",le="0.005"}'
        " 0.0",
        'ratelimit_service_response_time_seconds_bucket{grpc_method="ShouldRateLimit",le="0.01"}'
        " 1.0",
        'ratelimit_service_response_time_seconds_count{grpc_method="ShouldRateLimit"} 1.0',
        'ratelimit_service_response_time_seconds_sum{grpc_method="ShouldRateLimit"} 0.007',
        "ratelimit_redis_pool_cx_active 2.0",  # unmapped: the escaped name
    }
    assert expected <= got, expected - got


async def test_each_scrape_is_current_and_counters_add_up() -> None:
    h = harness(RULES)
    line = 'ratelimit_service_rate_limit_total_hits{domain="edge",key1="remote_address"}'
    async with pulling(h, {"EXTRA_TAGS": ""}) as url, httpx.AsyncClient() as client:
        await traffic(h)
        assert f"{line} 3.0" in samples((await client.get(url)).text)
        await traffic(h)
        assert f"{line} 6.0" in samples((await client.get(url)).text)
        assert (await client.get(url.replace("/metrics", "/other"))).status_code == 404


async def test_extra_tags_are_labels() -> None:
    h = harness(RULES)
    async with pulling(h, {"EXTRA_TAGS": "zone:eu.west"}) as url, httpx.AsyncClient() as client:
        await traffic(h)
        got = samples((await client.get(url)).text)
    assert 'ratelimit_service_config_load_success{zone="eu_west"} 1.0' in got


MAPPER = """
defaults:
  observer_type: histogram
  histogram_options: {buckets: [1, 10]}
mappings:
  - match: "ratelimit.service.rate_limit.*.*.over_limit"
    name: "rl_over"
    labels: {rule: "$1/$2"}
  - match: "ratelimit\\\\.service\\\\.rate_limit\\\\..*"
    match_type: regex
    action: drop
  - match: "ratelimit_server.*.response_time"
    name: "rl_latency_ms"
    labels: {method: "$1"}
"""


async def test_mapper_file_replaces_the_default(tmp_path: Path) -> None:
    path = tmp_path / "mapper.yaml"
    path.write_text(MAPPER)
    h = harness(RULES)
    async with (
        pulling(h, {"PULLMETRICS_PATH": "/prom", "PULLMETRICS_MAPPER_YAML": str(path)}) as (url),
        httpx.AsyncClient() as client,
    ):
        assert url.endswith("/prom")
        await traffic(h)
        got = samples((await client.get(url)).text)
    assert 'rl_over{rule="edge/remote_address"} 1.0' in got
    assert not any(s.startswith("ratelimit_service_rate_limit") for s in got)  # dropped
    assert 'rl_latency_ms_bucket{le="1.0",method="ShouldRateLimit"} 0.0' in got
    assert 'rl_latency_ms_bucket{le="10.0",method="ShouldRateLimit"} 1.0' in got
    assert 'rl_latency_ms_sum{method="ShouldRateLimit"} 7.0' in got
    assert "ratelimit_service_config_load_success 1.0" in got  # unmapped: escaped name


def test_response_time_in_milliseconds() -> None:
    mapped = Mapper.default(response_time_as_milliseconds=True).map(
        "ratelimit_server.Check.response_time", "observer"
    )
    assert mapped is not None and mapped.scale == 1.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mappings: [{match: 'a.*', name: x, bogus: 1}]", "mapping 1: unknown key(s) bogus"),
        ("mappings: [{match: 'a.*'}]", "mapping 1: 'name' must be a non-empty string"),
        ("mappings: [{match: '(', match_type: regex, name: x}]", "mapping 1: invalid regex"),
        ("mappings: [{match: 'a', name: x, labels: {'1x': v}}]", "'1x' is not a valid label"),
        ("mappings: [{match: 'a', name: x, timer_type: gauge}]", "must be one of histogram"),
        ("mappings: [{match: 'a', name: x, buckets: []}]", "buckets must be a non-empty list"),
        ("mappings: {", "not valid YAML"),
        ("other: 1", "unknown key(s) other"),
    ],
)
def test_invalid_mapper_files_are_named(text: str, message: str) -> None:
    with pytest.raises(MappingError, match="mapper") as error:
        Mapper.from_yaml(text, "mapper")
    assert message in str(error.value)


async def test_unreadable_mapper_file_stops_startup(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {"USE_PULLMETRICS": "true", "PULLMETRICS_MAPPER_YAML": str(tmp_path / "missing.yaml")}
    )
    with pytest.raises(SettingsError, match=r"PULLMETRICS_MAPPER_YAML=.*cannot be read"):
        StatsReporting(settings.stats, harness().stats.store)
