"""The xDS provider against a management server over real loopback gRPC: snapshots applied
and ACKed, bad ones NACKed, reconnects with the backoff, node and headers, TLS, the message
size limit, and the wait for the first configuration (TLS: test_xds_tls.py)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import grpc
import pytest

from generated.proto.ratelimit.config.ratelimit.v3 import rls_conf_pb2 as rls
from handlers.ratelimit.config.parse import dump
from handlers.ratelimit.config.provider import ConfigUpdate
from handlers.ratelimit.config.xds import XdsConfigProvider
from handlers.ratelimit.config.xds_resources import RATE_LIMIT_CONFIG_TYPE_URL, pack_config
from handlers.ratelimit.settings import Settings
from tests.ratelimit.xds_management_server import TIMEOUT, ManagementServer, ReceivedRequest

# small intervals keep the tests fast: retry 50 ms (+/-50 %), then 100 ms, 200 ms, 200 ms...
FAST_RETRIES = {
    "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL": "50ms",
    "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL": "100ms",
    "XDS_CLIENT_BACKOFF_MAX_INTERVAL": "200ms",
    "XDS_CLIENT_BACKOFF_RANDOM_FACTOR": "2",
    "XDS_CLIENT_BACKOFF_JITTER": "false",
}


def config(
    domain: str,
    *descriptors: rls.RateLimitDescriptor,
    name: str | None = None,
) -> rls.RateLimitConfig:
    return rls.RateLimitConfig(name=name or domain, domain=domain, descriptors=descriptors)


def rule(
    key: str,
    value: str = "",
    unit: rls.RateLimitUnit.ValueType = rls.MINUTE,
    requests: int = 1,
    *children: rls.RateLimitDescriptor,
    shadow_mode: bool = False,
    quota_mode: bool = False,
) -> rls.RateLimitDescriptor:
    return rls.RateLimitDescriptor(
        key=key,
        value=value,
        rate_limit=rls.RateLimitPolicy(unit=unit, requests_per_unit=requests),
        descriptors=children,
        shadow_mode=shadow_mode,
        quota_mode=quota_mode,
    )


FOO = config("foo", rule("k1", "v1", rls.MINUTE, 3))
FOO_DUMP = ["foo.k1_v1: unit=MINUTE requests_per_unit=3, shadow_mode: false, quota_mode: false"]


class Updates:
    """The provider's listener: collects updates; ``next()`` waits for one with a deadline."""

    def __init__(self) -> None:
        self.received: list[ConfigUpdate] = []
        self._taken = 0

    def __call__(self, update: ConfigUpdate) -> None:
        self.received.append(update)

    async def next(self) -> ConfigUpdate:
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while len(self.received) <= self._taken:
            assert asyncio.get_running_loop().time() < deadline, "no configuration update"
            await asyncio.sleep(0.01)
        self._taken += 1
        return self.received[self._taken - 1]

    async def next_rules(self) -> list[str]:
        update = await self.next()
        assert update.error is None, update.error
        assert update.rules is not None
        return dump(update.rules)

    async def next_error(self) -> str:
        update = await self.next()
        assert update.error is not None, dump(update.rules) if update.rules else None
        return str(update.error)


def xds_settings(server: ManagementServer, **env: str) -> Settings:
    return Settings.from_env(
        {
            "CONFIG_TYPE": "GRPC_XDS_SOTW",
            "CONFIG_GRPC_XDS_SERVER_URL": server.address,
            **FAST_RETRIES,
            **env,
        }
    )


Connect = Callable[..., Coroutine[Any, Any, tuple[XdsConfigProvider, Updates]]]


@pytest.fixture
async def server() -> AsyncIterator[ManagementServer]:
    management = ManagementServer()
    await management.start()
    try:
        yield management
    finally:
        await management.stop()


@pytest.fixture
async def connect(server: ManagementServer) -> AsyncIterator[Connect]:
    """Starts providers against ``server`` (or ``target``), closing them at the end."""
    providers: list[XdsConfigProvider] = []

    async def start(
        target: ManagementServer | None = None, **env: str
    ) -> tuple[XdsConfigProvider, Updates]:
        updates = Updates()
        provider = XdsConfigProvider(xds_settings(target or server, **env), updates)
        providers.append(provider)
        await provider.start()
        return provider, updates

    yield start
    for provider in providers:
        await provider.close()


def acks(version: str) -> Callable[[ReceivedRequest], bool]:
    return lambda r: r.version_info == version and r.response_nonce != "" and r.error is None


def nacks(request: ReceivedRequest) -> bool:
    return request.error is not None


async def test_initial_snapshot_is_applied_and_acked(
    server: ManagementServer, connect: Connect
) -> None:
    server.set_snapshot("1", [FOO])
    provider, updates = await connect()
    assert updates.received, "start() returns once the first configuration is processed"
    assert await updates.next_rules() == FOO_DUMP
    first = server.requests[0]
    assert (first.version_info, first.response_nonce, first.error) == ("", "", None)
    assert first.type_url == RATE_LIMIT_CONFIG_TYPE_URL
    assert first.node_id == "default"
    ack = await server.wait_for_request(acks("1"))
    assert ack.response_nonce == server.sent[0].nonce
    assert ack.type_url == RATE_LIMIT_CONFIG_TYPE_URL
    assert provider.acked_version == "1"


async def test_multi_domain_update(server: ManagementServer, connect: Connect) -> None:
    server.set_snapshot("1", [FOO])
    _, updates = await connect()
    assert await updates.next_rules() == FOO_DUMP
    server.set_snapshot(
        "2",
        [
            config("foo", rule("k1", "v1", rls.MINUTE, 3), rule("k2", "", rls.SECOND, 5)),
            config("bar", rule("k1", "v1", rls.HOUR, 10)),
        ],
    )
    assert await updates.next_rules() == [
        "foo.k1_v1: unit=MINUTE requests_per_unit=3, shadow_mode: false, quota_mode: false",
        "foo.k2: unit=SECOND requests_per_unit=5, shadow_mode: false, quota_mode: false",
        "bar.k1_v1: unit=HOUR requests_per_unit=10, shadow_mode: false, quota_mode: false",
    ]
    ack = await server.wait_for_request(acks("2"))
    assert ack.response_nonce == server.sent[1].nonce


async def test_deeper_tree_with_unlimited_and_shadow_and_quota_flags(
    server: ManagementServer, connect: Connect
) -> None:
    unlimited = rls.RateLimitDescriptor(
        key="k3", rate_limit=rls.RateLimitPolicy(unlimited=True), shadow_mode=True
    )
    quota = rule("k3", "v3", rls.DAY, 100, shadow_mode=True, quota_mode=True)
    server.set_snapshot(
        "1",
        [
            config(
                "foo",
                rule("k1", "v1", rls.MINUTE, 3, rule("k2", "v2", rls.HOUR, 9, unlimited, quota)),
            )
        ],
    )
    _, updates = await connect()
    assert await updates.next_rules() == [
        "foo.k1_v1: unit=MINUTE requests_per_unit=3, shadow_mode: false, quota_mode: false",
        "foo.k1_v1.k2_v2: unit=HOUR requests_per_unit=9, shadow_mode: false, quota_mode: false",
        "foo.k1_v1.k2_v2.k3: unit=UNKNOWN requests_per_unit=0, shadow_mode: true, "
        "quota_mode: false",
        "foo.k1_v1.k2_v2.k3_v3: unit=DAY requests_per_unit=100, shadow_mode: true, "
        "quota_mode: true",
    ]


async def test_same_domain_configs_merge_with_merge_domain_config(
    server: ManagementServer, connect: Connect
) -> None:
    server.set_snapshot(
        "1",
        [
            config("foo", rule("k1", "v1", rls.MINUTE, 3), name="foo-1"),
            config("foo", rule("k2", "v2", rls.MINUTE, 4), name="foo-2"),
        ],
    )
    _, merged = await connect(MERGE_DOMAIN_CONFIG="true")
    assert await merged.next_rules() == [
        "foo.k1_v1: unit=MINUTE requests_per_unit=3, shadow_mode: false, quota_mode: false",
        "foo.k2_v2: unit=MINUTE requests_per_unit=4, shadow_mode: false, quota_mode: false",
    ]
    _, separate = await connect()
    assert await separate.next_error() == "foo-2: duplicate domain 'foo' in config file"


async def test_bad_configuration_is_nacked_with_its_error(
    server: ManagementServer, connect: Connect
) -> None:
    server.set_snapshot("1", [FOO])
    provider, updates = await connect()
    assert await updates.next_rules() == FOO_DUMP
    await server.wait_for_request(acks("1"))
    bad = config("foo", rls.RateLimitDescriptor(key="k1", rate_limit=rls.RateLimitPolicy()))
    server.set_snapshot("2", [bad])
    assert await updates.next_error() == "foo: invalid rate limit unit 'UNKNOWN'"
    nack = await server.wait_for_request(nacks)
    # the NACK names the version still applied and the nonce of the response it refuses
    assert (nack.version_info, nack.response_nonce) == ("1", server.sent[1].nonce)
    assert nack.error == "foo: invalid rate limit unit 'UNKNOWN'"
    assert nack.error_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert provider.acked_version == "1"

    server.set_resources("3", [pack_config(FOO)], type_url="type.googleapis.com/other")
    assert await updates.next_error() == (
        "xds: unexpected type URL 'type.googleapis.com/other': expected "
        f"'{RATE_LIMIT_CONFIG_TYPE_URL}'"
    )
    server.set_snapshot("4", [config("bar", rule("k", "", rls.SECOND, 1))])
    assert await updates.next_rules() == [
        "bar.k: unit=SECOND requests_per_unit=1, shadow_mode: false, quota_mode: false"
    ]
    ack = await server.wait_for_request(acks("4"))
    assert ack.response_nonce == server.sent[3].nonce
    assert [(r.version_info, r.error is not None) for r in server.requests] == [
        ("", False),
        ("1", False),
        ("1", True),
        ("1", True),
        ("4", False),
    ]


async def test_reconnects_after_the_stream_is_dropped(
    server: ManagementServer, connect: Connect
) -> None:
    server.set_snapshot("1", [FOO])
    _, updates = await connect()
    assert await updates.next_rules() == FOO_DUMP
    await server.wait_for_request(acks("1"))
    loop = asyncio.get_running_loop()
    dropped = loop.time()
    server.drop_streams()
    again = await server.wait_for_request(lambda r: r.stream == 2)
    waited = loop.time() - dropped
    # the last ACKed version is sent again, with no nonce (nonces belong to a stream)
    assert (again.version_info, again.response_nonce, again.error) == ("1", "", None)
    assert 0.025 <= waited < 2.0  # the retry interval, 50 ms +/-50 %, plus scheduling
    server.set_snapshot("2", [config("bar", rule("k", "", rls.SECOND, 1))])
    assert (await updates.next_rules())[0].startswith("bar.k:")
    assert len(updates.received) == 2  # version 1 was not sent again


async def test_reconnects_after_a_server_restart_with_the_backoff(
    server: ManagementServer, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ratelimit.config")
    server.set_snapshot("1", [FOO])
    _, updates = await connect()
    assert await updates.next_rules() == FOO_DUMP
    await server.wait_for_request(acks("1"))
    await server.stop()

    def retries() -> list[float]:
        found = (re.search(r"retrying in ([\d.]+)s", m) for m in caplog.messages)
        return [float(match.group(1)) for match in found if match]

    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while len(retries()) < 4:
        assert loop.time() < deadline, caplog.messages
        await asyncio.sleep(0.01)
    # first the retry interval, then the exponential backoff: 100 ms, doubling, capped at 200 ms
    waits = retries()[:4]
    assert 0.025 <= waits[0] <= 0.075
    assert waits[1:] == [0.1, 0.2, 0.2]
    restarted = loop.time()
    seen = len(server.requests)
    server.set_snapshot("2", [config("bar", rule("k", "", rls.SECOND, 1))])
    await server.restart()
    again = await server.wait_for_request(lambda r: r.response_nonce == "", after=seen)
    assert loop.time() - restarted < 0.2 + 2.0  # at most one capped wait, plus scheduling
    assert again.version_info == "1"
    assert (await updates.next_rules())[0].startswith("bar.k:")


async def test_node_metadata_and_extra_headers(server: ManagementServer, connect: Connect) -> None:
    server.set_snapshot("1", [FOO])
    await connect(
        CONFIG_GRPC_XDS_NODE_ID="ratelimit-7",
        CONFIG_GRPC_XDS_NODE_METADATA="zone=eu-1,team=edge",
        CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS="X-Tenant:blue,authorization:Bearer t0k",
    )
    for request in server.requests:
        assert request.node_id == "ratelimit-7"
        assert request.node_metadata == {"zone": "eu-1", "team": "edge"}
        assert request.headers["x-tenant"] == "blue"
        assert request.headers["authorization"] == "Bearer t0k"


def big_config(descriptors: int) -> rls.RateLimitConfig:
    return config("big", *(rule(f"key{n}", "v", rls.MINUTE, n) for n in range(descriptors)))


async def test_response_over_the_max_message_size_is_an_error(
    server: ManagementServer, connect: Connect
) -> None:
    assert big_config(10).ByteSize() < 1000 < big_config(100).ByteSize()
    server.set_snapshot("1", [FOO])
    _, updates = await connect(XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES="1000")
    assert await updates.next_rules() == FOO_DUMP
    server.set_snapshot("2", [big_config(100)])
    error = await updates.next_error()
    assert error.startswith("xds: response rejected (RESOURCE_EXHAUSTED: ")
    assert "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES=1000" in error
    server.set_snapshot("3", [big_config(10)])
    while True:  # the big version may be refused again on a new stream meanwhile
        update = await updates.next()
        if update.rules is not None:
            break
    assert len(dump(update.rules)) == 10
    _, unlimited = await connect()  # gRPC's default limit, 4 MiB
    assert len(await unlimited.next_rules()) == 10


async def test_start_waits_for_the_first_response(
    server: ManagementServer, connect: Connect
) -> None:
    starting = asyncio.create_task(connect())
    await server.wait_for_request(lambda r: True)
    assert not starting.done()
    server.set_snapshot("1", [FOO])
    _, updates = await asyncio.wait_for(starting, TIMEOUT)
    assert await updates.next_rules() == FOO_DUMP


async def test_a_failed_first_response_ends_the_wait_too(
    server: ManagementServer, connect: Connect
) -> None:
    server.set_snapshot("1", [config("")])
    _, updates = await connect()
    assert updates.received
    assert await updates.next_error() == ": config file cannot have empty domain"


async def test_forced_start_does_not_wait(server: ManagementServer, connect: Connect) -> None:
    _, updates = await connect(FORCE_START_WITHOUT_INITIAL_CONFIG="true")
    assert updates.received == []
    server.set_snapshot("1", [FOO])
    assert await updates.next_rules() == FOO_DUMP
