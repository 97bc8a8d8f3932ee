"""Issue 23's rule fields over xDS: our superset of upstream's ``RateLimitConfig``
(``contractplatform.ratelimit.config.v1``, fields 1001+) under upstream's type URL.

The superset keeps upstream's fields as they are (upstream's own messages read its bytes, the
extension skipped); an upstream-shaped resource gives exactly upstream's document; a resource
with the extension loads to the same rules as the same rule file, with the rule file's error
messages; and over a real management server such rules decide as ``algorithms.py`` says (the
same model and clock as ``tests/ratelimit/test_algorithm_rules.py``), while an invalid value is
NACKed with its error and the rules in force stay."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor as proto_descriptor
from google.protobuf import duration_pb2, json_format

from generated.proto.contractplatform.ratelimit.config.v1 import rls_conf_superset_pb2 as ours
from generated.proto.envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
from generated.proto.ratelimit.config.ratelimit.v3 import rls_conf_pb2 as rls
from handlers.ratelimit.config.model import ALGORITHMS, RuleLimit, RuleSet
from handlers.ratelimit.config.parse import ConfigError, dump, load_rule_set
from handlers.ratelimit.config.xds_resources import (
    RATE_LIMIT_CONFIG_TYPE_URL,
    config_document,
    load_resources,
    pack_config,
)
from handlers.ratelimit.server import RateLimitServer
from tests.ratelimit.config.test_xds import acks, nacks, xds_settings
from tests.ratelimit.config.test_xds import server as server  # the fixture
from tests.ratelimit.conftest import Clock, Harness, RecordingStore, descriptor, request
from tests.ratelimit.test_algorithm_rules import MODELLED, T0, decides_as_the_algorithms, rule
from tests.ratelimit.xds_management_server import TIMEOUT, ManagementServer

OK = rls_pb2.RateLimitResponse.OK
OVER = rls_pb2.RateLimitResponse.OVER_LIMIT
FIRST_EXTENSION_FIELD = 1001


def policy(
    unit: rls.RateLimitUnit.ValueType = rls.UNKNOWN,
    requests: int = 0,
    *,
    window_ms: int | None = None,
    **fields: Any,
) -> ours.RateLimitPolicy:
    """A superset policy; ``window_ms`` becomes the ``window`` Duration."""
    made = ours.RateLimitPolicy(unit=unit, requests_per_unit=requests, **fields)
    if window_ms is not None:
        made.window.FromMilliseconds(window_ms)
    return made


def config(*descriptors: ours.RateLimitDescriptor, name: str = "c") -> ours.RateLimitConfig:
    return ours.RateLimitConfig(name=name, domain="d", descriptors=descriptors)


def k(first: ours.RateLimitPolicy | None, *more: ours.RateLimitPolicy) -> ours.RateLimitDescriptor:
    """Descriptor ``k`` (the rule ``test_algorithm_rules.rule`` writes) with these limits."""
    return ours.RateLimitDescriptor(key="k", rate_limit=first, more_rate_limits=more)


# test_algorithm_rules.MODELLED's rules, spelt as xDS resources
XDS_MODELLED = {
    "sliding 5/s": k(policy(rls.SECOND, 5, algorithm=ours.SLIDING_WINDOW)),
    "sliding 7 per 2500ms": k(policy(requests=7, window_ms=2500, algorithm=ours.SLIDING_WINDOW)),
    "token bucket 4/s": k(policy(rls.SECOND, 4, algorithm=ours.TOKEN_BUCKET)),
    "token bucket 10/min burst 3": k(policy(rls.MINUTE, 10, algorithm=ours.TOKEN_BUCKET, burst=3)),
    "fixed 6 per 30s (upstream counting)": k(policy(rls.SECOND, 6, unit_multiplier=30)),
    "fixed 3 per 500ms": k(policy(requests=3, window_ms=500)),
    "two limits": k(
        policy(rls.SECOND, 3, algorithm=ours.TOKEN_BUCKET, name="fast"),
        policy(rls.SECOND, 10, unit_multiplier=10, name="slow"),
    ),
    "three limits": k(
        policy(requests=4, window_ms=1000, algorithm=ours.SLIDING_WINDOW, name="a"),
        policy(requests=2, window_ms=1000, algorithm=ours.TOKEN_BUCKET, burst=5, name="b"),
        policy(requests=20, window_ms=60_000, name="c"),
    ),
}


def limits(rule_set: RuleSet) -> tuple[RuleLimit | None, ...]:
    node = rule_set.domains["d"].root.children["k"]
    return (node.limit, *node.more_limits)


def xds_error(*descriptors: ours.RateLimitDescriptor) -> str:
    with pytest.raises(ConfigError) as raised:
        load_resources([pack_config(config(*descriptors))], merge_domains=False)
    return str(raised.value)


def yaml_error(body: str) -> str:
    """The rule file's error for the same rule, less its line (a resource has none)."""
    with pytest.raises(ConfigError) as raised:
        load_rule_set([("c", rule(body))], merge_domains=False)
    return re.sub(r" at line \d+", "", str(raised.value))


# --- the proto -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("upstream", "superset"),
    [
        (rls.RateLimitConfig, ours.RateLimitConfig),
        (rls.RateLimitDescriptor, ours.RateLimitDescriptor),
        (rls.RateLimitPolicy, ours.RateLimitPolicy),
    ],
)
def test_the_superset_keeps_upstreams_fields_and_adds_only_high_numbers(
    upstream: Any, superset: Any
) -> None:
    theirs: proto_descriptor.Descriptor = upstream.DESCRIPTOR
    mine: proto_descriptor.Descriptor = superset.DESCRIPTOR
    assert mine.name == theirs.name and mine.full_name != theirs.full_name

    def shape(field: proto_descriptor.FieldDescriptor) -> tuple[object, ...]:
        kind = field.message_type or field.enum_type
        # a message of ours stands for upstream's of the same name; an enum is upstream's own
        kind_name = (
            kind.full_name.replace(ours.DESCRIPTOR.package, rls.DESCRIPTOR.package)
            if kind is not None
            else None
        )
        return (field.name, field.type, field.is_repeated, kind_name)

    for number, field in theirs.fields_by_number.items():
        assert shape(mine.fields_by_number[number]) == shape(field)
    added = set(mine.fields_by_number) - set(theirs.fields_by_number)
    assert all(number >= FIRST_EXTENSION_FIELD for number in added)
    assert added or mine.name == "RateLimitConfig"


def test_algorithm_names_are_the_rule_files() -> None:
    names = [
        value.name.lower()
        for value in ours.RateLimitAlgorithm.DESCRIPTOR.values
        if value.number != ours.ALGORITHM_UNSPECIFIED
    ]
    assert names == list(ALGORITHMS)


def every_extension() -> ours.RateLimitConfig:
    return config(
        k(
            policy(rls.SECOND, 3, algorithm=ours.TOKEN_BUCKET, burst=7, name="fast"),
            policy(requests=10, window_ms=30_000, algorithm=ours.SLIDING_WINDOW, name="slow"),
        ),
        ours.RateLimitDescriptor(
            key="nested",
            value="v",
            shadow_mode=True,
            descriptors=[
                ours.RateLimitDescriptor(
                    key="leaf",
                    rate_limit=policy(rls.MINUTE, 9, unit_multiplier=5),
                    quota_mode=True,
                )
            ],
        ),
    )


def test_upstream_reads_the_superset_bytes_and_skips_the_extension() -> None:
    sent = every_extension()
    theirs = rls.RateLimitConfig.FromString(sent.SerializeToString())
    # the same resource without the extension, as upstream's messages would write it
    plain = ours.RateLimitConfig()
    plain.CopyFrom(sent)
    for item in (plain.descriptors[0], plain.descriptors[1].descriptors[0]):
        item.ClearField("more_rate_limits")
        for name in ("algorithm", "burst", "unit_multiplier", "window"):
            item.rate_limit.ClearField(name)
    # upstream keeps the extension as unknown fields: forwarding it loses nothing
    assert ours.RateLimitConfig.FromString(theirs.SerializeToString()) == sent
    # and reads upstream's fields as the resource without the extension (unknown fields aside)
    assert json_format.MessageToDict(theirs) == json_format.MessageToDict(
        rls.RateLimitConfig.FromString(plain.SerializeToString())
    )
    assert theirs.SerializeToString() == sent.SerializeToString()
    first = theirs.descriptors[0].rate_limit
    assert (first.unit, first.requests_per_unit, first.name) == (rls.SECOND, 3, "fast")
    leaf = theirs.descriptors[1].descriptors[0].rate_limit
    assert (leaf.unit, leaf.requests_per_unit) == (rls.MINUTE, 9)


def test_an_upstream_shaped_resource_gives_upstreams_document() -> None:
    upstream = rls.RateLimitConfig(
        name="c",
        domain="d",
        descriptors=[
            rls.RateLimitDescriptor(
                key="k",
                rate_limit=rls.RateLimitPolicy(
                    unit=rls.HOUR,
                    requests_per_unit=4,
                    name="n",
                    replaces=[rls.RateLimitReplace(name="o")],
                ),
                descriptors=[
                    rls.RateLimitDescriptor(key="u", rate_limit=rls.RateLimitPolicy(unlimited=True))
                ],
            )
        ],
    )
    superset = ours.RateLimitConfig.FromString(upstream.SerializeToString())
    assert superset.SerializeToString() == upstream.SerializeToString()
    document = config_document(upstream)
    assert config_document(superset) == document
    assert document["descriptors"][0]["rate_limit"] == {
        "unit": "HOUR",
        "requests_per_unit": 4,
        "unlimited": False,
        "name": "n",
        "replaces": [{"name": "o"}],
    }
    # an unset unit stays upstream's UNKNOWN (an unlimited rule's)
    assert document["descriptors"][0]["descriptors"][0]["rate_limit"]["unit"] == "UNKNOWN"
    assert "rate_limits" not in document["descriptors"][0]
    assert pack_config(superset) == pack_config(upstream)
    assert pack_config(superset).type_url == RATE_LIMIT_CONFIG_TYPE_URL


def test_the_document_carries_the_rule_file_keys() -> None:
    document = config_document(every_extension())
    assert document["descriptors"][0]["rate_limits"] == [
        {
            "unit": "SECOND",
            "requests_per_unit": 3,
            "unlimited": False,
            "name": "fast",
            "replaces": [],
            "algorithm": "token_bucket",
            "burst": 7,
        },
        {
            "requests_per_unit": 10,
            "unlimited": False,
            "name": "slow",
            "replaces": [],
            "algorithm": "sliding_window",
            "window": "30s",
        },
    ]
    assert "rate_limit" not in document["descriptors"][0]
    leaf = document["descriptors"][1]["descriptors"][0]
    assert leaf["rate_limit"]["unit_multiplier"] == 5


# --- the same rules as the rule file --------------------------------------------------------------


def test_every_modelled_rule_has_its_resource() -> None:
    assert list(XDS_MODELLED) == list(MODELLED)


@pytest.mark.parametrize("name", list(MODELLED))
def test_a_resource_loads_to_the_rule_files_rules(name: str) -> None:
    from_xds = load_resources([pack_config(config(XDS_MODELLED[name]))], merge_domains=False)
    from_yaml = load_rule_set([("c", rule(MODELLED[name][0]))], merge_domains=False)
    assert limits(from_xds) == limits(from_yaml)
    assert dump(from_xds) == dump(from_yaml)


@pytest.mark.parametrize(
    ("window_ms", "spelt"),
    [(500, "500ms"), (1500, "1s500ms"), (90 * 60_000, "5400s"), (86_400_000, "86400s")],
)
def test_window_durations(window_ms: int, spelt: str) -> None:
    resource = config(k(policy(requests=5, window_ms=window_ms)))
    assert config_document(resource)["descriptors"][0]["rate_limit"]["window"] == spelt
    assert (
        limits(load_resources([pack_config(resource)], merge_domains=False))[0]
        == (
            limits(
                load_rule_set(
                    [("c", rule(f"rate_limit: {{window: {spelt}, requests_per_unit: 5}}\n"))],
                    merge_domains=False,
                )
            )[0]
        )
    )


def test_several_limits_without_rate_limit() -> None:
    only_more = k(None, policy(rls.SECOND, 2, name="x"), policy(rls.DAY, 9, name="y"))
    loaded = limits(load_resources([pack_config(config(only_more))], merge_domains=False))
    yaml_text = rule(
        "rate_limits:\n"
        "  - {unit: second, requests_per_unit: 2, name: x}\n"
        "  - {unit: day, requests_per_unit: 9, name: y}\n"
    )
    assert loaded == limits(load_rule_set([("c", yaml_text)], merge_domains=False))


SAME_ERRORS = [
    (
        k(policy(rls.SECOND, 5, algorithm=ours.TOKEN_BUCKET, burst=0)),
        "rate_limit: {unit: second, requests_per_unit: 5, algorithm: token_bucket, burst: 0}\n",
    ),
    (
        k(policy(rls.SECOND, 5, burst=2)),
        "rate_limit: {unit: second, requests_per_unit: 5, burst: 2}\n",
    ),
    (
        k(policy(rls.SECOND, 5, unit_multiplier=0)),
        "rate_limit: {unit: second, requests_per_unit: 5, unit_multiplier: 0}\n",
    ),
    (
        k(policy(requests=5, window_ms=50)),
        "rate_limit: {requests_per_unit: 5, window: 50ms}\n",
    ),
    (
        k(policy(requests=5, window_ms=400 * 86_400_000)),
        "rate_limit: {requests_per_unit: 5, window: 34560000s}\n",
    ),
    (
        k(policy(rls.SECOND, 5, window_ms=1000)),
        "rate_limit: {unit: SECOND, requests_per_unit: 5, window: 1s}\n",
    ),
    (
        k(policy(requests=5, unit_multiplier=2)),
        "rate_limit: {requests_per_unit: 5, unit_multiplier: 2}\n",
    ),
    (
        k(policy(requests=5, algorithm=ours.SLIDING_WINDOW)),
        "rate_limit: {requests_per_unit: 5, algorithm: sliding_window}\n",
    ),
    (
        k(policy(rls.SECOND, 5, algorithm=7)),
        "rate_limit: {unit: second, requests_per_unit: 5, algorithm: 7}\n",
    ),
    (
        k(policy(unlimited=True, algorithm=ours.TOKEN_BUCKET)),
        "rate_limit: {unlimited: true, algorithm: token_bucket}\n",
    ),
    (
        k(policy(rls.SECOND, 1), policy(unlimited=True)),
        "rate_limits:\n  - {unit: second, requests_per_unit: 1}\n  - {unlimited: true}\n",
    ),
    (
        k(policy(rls.SECOND, 1), policy(rls.SECOND, 1, replaces=[rls.RateLimitReplace(name="x")])),
        "rate_limits:\n  - {unit: second, requests_per_unit: 1}\n"
        "  - {unit: second, requests_per_unit: 1, replaces: [{name: x}]}\n",
    ),
    (
        k(policy(rls.YEAR, 1, algorithm=ours.TOKEN_BUCKET, burst=1_000_000)),
        "rate_limit: {unit: year, requests_per_unit: 1, algorithm: token_bucket, burst: 1000000}\n",
    ),
]


@pytest.mark.parametrize(("resource", "body"), SAME_ERRORS)
def test_errors_are_the_rule_files(resource: ours.RateLimitDescriptor, body: str) -> None:
    message = xds_error(resource)
    assert message.startswith("c: config error")
    assert message == yaml_error(body)


@pytest.mark.parametrize(
    ("seconds", "nanos", "spelt"),
    [(-1, 0, "-1s"), (0, 500_000, "0.0005s"), (1, 1, "1.000000001s"), (2, -1, "1.999999999s")],
)
def test_durations_that_are_no_window_are_refused(seconds: int, nanos: int, spelt: str) -> None:
    resource = k(policy(requests=5))
    resource.rate_limit.window.CopyFrom(duration_pb2.Duration(seconds=seconds, nanos=nanos))
    assert xds_error(resource) == (
        f"c: config error, rate limit 'd.k': invalid rate limit window '{spelt}': expected a "
        "duration such as 500ms, 30s, 5m, 1h, 1d or 1h30m"
    )


def test_three_limits_load_as_their_yaml() -> None:
    resource = pack_config(config(XDS_MODELLED["three limits"]))
    from_xds = load_resources([resource], merge_domains=False)
    from_yaml = load_rule_set([("c", rule(MODELLED["three limits"][0]))], merge_domains=False)
    assert limits(from_xds) == limits(from_yaml)


# --- over a real management server --------------------------------------------------------------


@pytest.fixture
async def service(server: ManagementServer) -> AsyncIterator[Callable[[Clock], RateLimitServer]]:
    """Services on ``server``'s xDS, with the memory backend and the given clock."""
    services: list[RateLimitServer] = []

    def build(clock: Clock) -> RateLimitServer:
        settings = xds_settings(server, BACKEND_TYPE="memory", DISABLE_STATS="true").changed(
            host="127.0.0.1",
            port=0,
            grpc_host="127.0.0.1",
            grpc_port=0,
            debug_host="127.0.0.1",
            debug_port=0,
        )
        services.append(RateLimitServer(settings, store=RecordingStore(), clock=clock))
        return services[-1]

    yield build
    for running in services:
        await running.stop()


def harness_of(running: RateLimitServer, clock: Clock) -> Harness:
    assert isinstance(running.store, RecordingStore)
    return Harness(running.service, running.stats, running.store, clock)


@pytest.mark.parametrize("name", list(MODELLED))
async def test_pushed_rules_decide_as_the_algorithms(
    server: ManagementServer, service: Callable[[Clock], RateLimitServer], name: str
) -> None:
    server.set_snapshot("1", [config(XDS_MODELLED[name])])
    clock = Clock(T0)
    running = service(clock)
    await running.start()
    await server.wait_for_request(acks("1"))
    await decides_as_the_algorithms(harness_of(running, clock), name)


async def ask(running: RateLimitServer) -> int:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
        stub = rls_pb2_grpc.RateLimitServiceStub(channel)
        response = await stub.ShouldRateLimit(request("d", descriptor(("k", "v"))), timeout=TIMEOUT)
        return int(response.overall_code)


def counter(running: RateLimitServer, name: str) -> int:
    return running.stats.store.value(f"ratelimit.service.{name}")


async def test_an_invalid_extension_is_nacked_and_the_rules_stay(
    server: ManagementServer, service: Callable[[Clock], RateLimitServer]
) -> None:
    bucket = config(k(policy(rls.MINUTE, 2, algorithm=ours.TOKEN_BUCKET, burst=2)))
    server.set_snapshot("1", [bucket])
    clock = Clock(T0)
    running = service(clock)
    await running.start()
    await server.wait_for_request(acks("1"))
    loaded = running.service.rules
    assert [await ask(running) for _ in range(3)] == [OK, OK, OVER]

    for version, bad, message in [
        (
            "2",
            k(policy(rls.MINUTE, 2, algorithm=ours.TOKEN_BUCKET, burst=0)),
            "c: config error, rate limit 'd.k': invalid burst '0': expected a whole number, "
            "at least 1",
        ),
        (
            "3",
            k(policy(requests=2, window_ms=50, algorithm=ours.SLIDING_WINDOW)),
            "c: config error, rate limit 'd.k': rate limit window '50ms' is out of range: "
            "from 100ms to 365d",
        ),
    ]:
        seen = len(server.requests)
        server.set_snapshot(version, [config(bad)])
        nack = await server.wait_for_request(nacks, after=seen)
        assert (nack.version_info, nack.error) == ("1", message)
        assert nack.error_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
        assert running.service.rules is loaded
    assert counter(running, "config_load_error") == 2

    # the bucket in force keeps its state: empty now, one token back after 30 s
    assert await ask(running) == OVER
    clock.now = T0 + 30
    assert [await ask(running) for _ in range(2)] == [OK, OVER]

    two = config(k(policy(rls.SECOND, 1, name="fast"), policy(rls.HOUR, 3, name="slow")))
    server.set_snapshot("4", [two])
    await server.wait_for_request(acks("4"))
    assert counter(running, "config_load_success") == 2
    clock.now = T0 + 100
    decided = []
    for step in range(4):
        clock.now = T0 + 100 + step
        decided.append(await ask(running))
    assert decided == [OK, OK, OK, OVER]  # one a second, three an hour
