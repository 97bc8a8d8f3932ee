"""RateLimitConfig resources to rules: every field maps to the rule-file document, and the
validation and its messages are the rule files' (the same YAML gives the same error)."""

from __future__ import annotations

import textwrap

import pytest
from google.protobuf import any_pb2

from generated.proto.ratelimit.config.ratelimit.v3 import rls_conf_pb2 as rls
from handlers.ratelimit.config.model import Unit
from handlers.ratelimit.config.parse import ConfigError, dump, load_rule_set
from handlers.ratelimit.config.xds_resources import (
    RATE_LIMIT_CONFIG_TYPE_URL,
    config_document,
    load_resources,
    pack_config,
)


def load(*configs: rls.RateLimitConfig, merge: bool = False) -> list[str]:
    return dump(load_resources([pack_config(c) for c in configs], merge_domains=merge))


def error_of(*configs: rls.RateLimitConfig, merge: bool = False) -> str:
    with pytest.raises(ConfigError) as raised:
        load_resources([pack_config(c) for c in configs], merge_domains=merge)
    return str(raised.value)


def yaml_error_of(name: str, text: str) -> str:
    with pytest.raises(ConfigError) as raised:
        load_rule_set([(name, textwrap.dedent(text))], merge_domains=False)
    return str(raised.value)


def test_type_url() -> None:
    assert RATE_LIMIT_CONFIG_TYPE_URL == (
        "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig"
    )


def test_every_field_is_mapped() -> None:
    config = rls.RateLimitConfig(
        name="edge-config",
        domain="edge",
        descriptors=[
            rls.RateLimitDescriptor(
                key="path",
                value="/login",
                detailed_metric=True,
                rate_limit=rls.RateLimitPolicy(
                    unit=rls.WEEK,
                    requests_per_unit=7,
                    name="login",
                    replaces=[rls.RateLimitReplace(name="other")],
                ),
                descriptors=[
                    rls.RateLimitDescriptor(
                        key="user", rate_limit=rls.RateLimitPolicy(unlimited=True)
                    )
                ],
            )
        ],
    )
    config.descriptors[0].metadata.update({"team": "auth", "tier": 2})
    assert config_document(config) == {
        "domain": "edge",
        "descriptors": [
            {
                "key": "path",
                "value": "/login",
                "shadow_mode": False,
                "quota_mode": False,
                "detailed_metric": True,
                "rate_limit": {
                    "unit": "WEEK",
                    "requests_per_unit": 7,
                    "unlimited": False,
                    "name": "login",
                    "replaces": [{"name": "other"}],
                },
                "metadata": {"team": "auth", "tier": 2.0},
                "descriptors": [
                    {
                        "key": "user",
                        "value": "",
                        "shadow_mode": False,
                        "quota_mode": False,
                        "detailed_metric": False,
                        "rate_limit": {
                            "unit": "UNKNOWN",
                            "requests_per_unit": 0,
                            "unlimited": True,
                            "name": "",
                            "replaces": [],
                        },
                        "descriptors": [],
                    }
                ],
            }
        ],
    }
    rules = load_resources([pack_config(config)], merge_domains=False)
    login = rules.domains["edge"].root.children["path_/login"]
    assert login.limit is not None
    assert (login.limit.unit, login.limit.name, login.limit.replaces) == (
        Unit.WEEK,
        "login",
        ("other",),
    )
    assert login.detailed_metric and login.metadata == {"team": "auth", "tier": 2.0}
    assert not login.value_to_metric and not login.share_threshold  # not in the proto
    user = login.children["user"]
    assert user.limit is not None and user.limit.unlimited


def test_descriptor_without_policy_is_a_placeholder() -> None:
    config = rls.RateLimitConfig(
        name="a",
        domain="a",
        descriptors=[
            rls.RateLimitDescriptor(
                key="k",
                descriptors=[
                    rls.RateLimitDescriptor(
                        key="n", rate_limit=rls.RateLimitPolicy(unit=rls.SECOND)
                    )
                ],
            )
        ],
    )
    assert load(config) == [
        "a.k.n: unit=SECOND requests_per_unit=0, shadow_mode: false, quota_mode: false"
    ]


@pytest.mark.parametrize(
    ("descriptors", "yaml_descriptors"),
    [
        (
            [rls.RateLimitDescriptor(key="k", rate_limit=rls.RateLimitPolicy(requests_per_unit=1))],
            "- key: k\n  rate_limit: {unit: UNKNOWN, requests_per_unit: 1}",
        ),
        (
            [
                rls.RateLimitDescriptor(
                    key="k",
                    rate_limit=rls.RateLimitPolicy(unit=rls.MINUTE, unlimited=True),
                )
            ],
            "- key: k\n  rate_limit: {unit: MINUTE, unlimited: true}",
        ),
        (
            [
                rls.RateLimitDescriptor(key="k", value="v"),
                rls.RateLimitDescriptor(key="k", value="v"),
            ],
            "- key: k\n  value: v\n- key: k\n  value: v",
        ),
        (
            [
                rls.RateLimitDescriptor(
                    key="k",
                    rate_limit=rls.RateLimitPolicy(
                        unit=rls.HOUR, name="n", replaces=[rls.RateLimitReplace(name="n")]
                    ),
                )
            ],
            "- key: k\n  rate_limit:\n"
            "    {unit: HOUR, requests_per_unit: 0, name: n, replaces: [{name: n}]}",
        ),
        (
            [
                rls.RateLimitDescriptor(
                    key="k",
                    rate_limit=rls.RateLimitPolicy(
                        unit=rls.HOUR, replaces=[rls.RateLimitReplace()]
                    ),
                )
            ],
            "- key: k\n  rate_limit: {unit: HOUR, requests_per_unit: 0, replaces: [{name: ''}]}",
        ),
        ([rls.RateLimitDescriptor(value="v")], "- value: v"),
    ],
)
def test_errors_are_the_rule_files(
    descriptors: list[rls.RateLimitDescriptor], yaml_descriptors: str
) -> None:
    config = rls.RateLimitConfig(name="cfg", domain="d", descriptors=descriptors)
    yaml_text = "domain: d\ndescriptors:\n" + textwrap.indent(yaml_descriptors, "  ")
    assert error_of(config) == yaml_error_of("cfg", yaml_text)


def test_empty_domain_and_duplicate_domain_name_the_config() -> None:
    assert error_of(rls.RateLimitConfig(name="nameless")) == (
        "nameless: config file cannot have empty domain"
    )
    first = rls.RateLimitConfig(name="foo-1", domain="foo")
    second = rls.RateLimitConfig(name="foo-2", domain="foo")
    assert error_of(first, second) == "foo-2: duplicate domain 'foo' in config file"


def test_merge_domain_config() -> None:
    first = rls.RateLimitConfig(
        name="foo-1",
        domain="foo",
        descriptors=[
            rls.RateLimitDescriptor(
                key="k1", rate_limit=rls.RateLimitPolicy(unit=rls.MINUTE, requests_per_unit=1)
            )
        ],
    )
    second = rls.RateLimitConfig(
        name="foo-2",
        domain="foo",
        descriptors=[
            rls.RateLimitDescriptor(
                key="k2", rate_limit=rls.RateLimitPolicy(unit=rls.DAY, requests_per_unit=2)
            )
        ],
    )
    assert load(first, second, merge=True) == [
        "foo.k1: unit=MINUTE requests_per_unit=1, shadow_mode: false, quota_mode: false",
        "foo.k2: unit=DAY requests_per_unit=2, shadow_mode: false, quota_mode: false",
    ]
    assert error_of(first, first, merge=True) == (
        "foo-1: duplicate descriptor composite key 'foo.k1'"
    )


def test_unknown_unit_number_prints_as_the_number() -> None:
    policy = rls.RateLimitPolicy(requests_per_unit=1)
    policy.unit = 9  # type: ignore[assignment]
    config = rls.RateLimitConfig(
        name="c", domain="d", descriptors=[rls.RateLimitDescriptor(key="k", rate_limit=policy)]
    )
    assert error_of(config) == "c: invalid rate limit unit '9'"


def test_resources_that_are_not_rate_limit_configs() -> None:
    other = any_pb2.Any(type_url="type.googleapis.com/google.protobuf.Empty", value=b"")
    good = pack_config(rls.RateLimitConfig(name="a", domain="a"))
    with pytest.raises(ConfigError) as raised:
        load_resources([good, other], merge_domains=False)
    assert str(raised.value) == (
        'resources[1]: mismatched message type: got "google.protobuf.Empty", '
        'want "ratelimit.config.ratelimit.v3.RateLimitConfig"'
    )
    garbage = any_pb2.Any(type_url=RATE_LIMIT_CONFIG_TYPE_URL, value=b"\xff\xff")
    with pytest.raises(ConfigError) as raised:
        load_resources([garbage], merge_domains=False)
    assert str(raised.value).startswith("resources[0]: cannot parse invalid wire-format data")
