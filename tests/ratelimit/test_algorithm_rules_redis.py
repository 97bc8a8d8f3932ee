"""Issue 23, step 2, on a real Redis: a fixed window of whole seconds that is not one unit
(``unit_multiplier``, ``window``) is upstream's counting under a key of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from handlers.ratelimit.config.provider import FileConfigProvider
from handlers.ratelimit.server import RateLimitServer
from handlers.ratelimit.settings import Settings
from tests.ratelimit.conftest import Clock, descriptor, request
from tests.ratelimit.redis_servers import RedisProcess, redis_server  # noqa: F401
from tests.ratelimit.test_server import runtime

RULES = """\
domain: edge
descriptors:
  - key: thirty
    rate_limit: {unit: second, unit_multiplier: 30, requests_per_unit: 2}
  - key: ninety
    rate_limit: {window: 1m30s, requests_per_unit: 1}
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
