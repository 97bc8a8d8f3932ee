"""The seed's twelve decision rules and the reference's semantics, with concrete counters."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from handlers.ratelimit.service import ServiceError
from handlers.ratelimit.settings import Modes
from tests.ratelimit.conftest import descriptor, harness, request, rules

MINUTE = 2
SECOND = 1


def as_dict(message: Any) -> dict[str, Any]:
    result: dict[str, Any] = json_format.MessageToDict(message)
    return result


async def decide(h: Any, domain: str, *descriptors: Any, hits: int = 0) -> dict[str, Any]:
    return as_dict(await h.service.should_rate_limit(request(domain, *descriptors, hits=hits)))


BASIC = """
domain: basic
descriptors:
  - key: key1
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: key1
    value: value1
    rate_limit: {unit: second, requests_per_unit: 5, name: exact}
  - key: nested
    descriptors:
      - key: sub
        rate_limit: {unit: hour, requests_per_unit: 3}
  - key: white
    value: listed
  - key: white
    rate_limit: {unit: minute, requests_per_unit: 1}
"""


async def test_rule1_levels_a_descriptor_matches_rules_at_its_own_depth() -> None:
    h = harness(BASIC)
    # two entries against a limit at level one only: no limit
    two = await decide(h, "basic", descriptor(("key1", "x"), ("more", "y")))
    assert two == {"overallCode": "OK", "statuses": [{"code": "OK"}]}
    # one entry against a placeholder that only nests: no limit
    one = await decide(h, "basic", descriptor(("nested", "a")))
    assert one == {"overallCode": "OK", "statuses": [{"code": "OK"}]}
    deep = await decide(h, "basic", descriptor(("nested", "a"), ("sub", "b")))
    assert deep["statuses"][0]["currentLimit"] == {"requestsPerUnit": 3, "unit": "HOUR"}
    assert deep["statuses"][0]["limitRemaining"] == 2
    assert h.store.increments[-1][0].key == "basic_nested_a_sub_b_0"


async def test_rule2_key_and_value_before_key_only() -> None:
    h = harness(BASIC)
    exact = await decide(h, "basic", descriptor(("key1", "value1")))
    assert exact["statuses"][0]["currentLimit"] == {
        "name": "exact",
        "requestsPerUnit": 5,
        "unit": "SECOND",
    }
    other = await decide(h, "basic", descriptor(("key1", "other")))
    assert other["statuses"][0]["currentLimit"] == {"requestsPerUnit": 2, "unit": "MINUTE"}
    # the default rule counts per distinct value (the request's entries make the key)
    assert [i.key for batch in h.store.increments for i in batch] == [
        "basic_key1_value1_1234",
        "basic_key1_other_1200",
    ]


WILD = """
domain: wild
descriptors:
  - key: file
    value: test1
    rate_limit: {unit: minute, requests_per_unit: 50}
  - key: file
    value: test*
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: mid
    value: bar*b
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: shared
    value: files/*
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: parent
    value: value1
    descriptors:
      - key: files
        value: nested/*
        share_threshold: true
        rate_limit: {unit: second, requests_per_unit: 10}
"""


async def test_rule3_wildcards_prefix_middle_and_own_counters() -> None:
    h = harness(WILD)
    assert (await decide(h, "wild", descriptor(("file", "test1"))))["statuses"][0]["currentLimit"][
        "requestsPerUnit"
    ] == 50
    assert (await decide(h, "wild", descriptor(("file", "test2"))))["statuses"][0]["currentLimit"][
        "requestsPerUnit"
    ] == 100
    assert (await decide(h, "wild", descriptor(("file", "test"))))["statuses"][0]["currentLimit"][
        "requestsPerUnit"
    ] == 100
    assert (await decide(h, "wild", descriptor(("file", "xtest"))))["statuses"] == [{"code": "OK"}]
    for value, matches in (("barab", True), ("barb", True), ("bara", False), ("xbarb", False)):
        status = (await decide(h, "wild", descriptor(("mid", value))))["statuses"][0]
        assert ("currentLimit" in status) is matches, value
    # without share_threshold each value has its own counter
    keys = {i.key for batch in h.store.increments for i in batch}
    assert {"wild_file_test2_1200", "wild_file_test_1200"} <= keys


async def test_rule3_share_threshold_one_counter_for_all_matches() -> None:
    h = harness(WILD)
    first = await decide(h, "wild", descriptor(("shared", "files/a")))
    second = await decide(h, "wild", descriptor(("shared", "files/b")))
    third = await decide(h, "wild", descriptor(("shared", "files/c")))
    assert first["statuses"][0]["limitRemaining"] == 1
    assert second["statuses"][0].get("limitRemaining", 0) == 0
    assert third["statuses"][0]["code"] == "OVER_LIMIT"
    assert await h.store.value("wild_shared_files/*_1200") == 3
    nested = await decide(h, "wild", descriptor(("parent", "value1"), ("files", "nested/x")))
    assert nested["statuses"][0]["limitRemaining"] == 9
    assert h.store.increments[-1][0].key == "wild_parent_value1_files_nested/*_1234"


async def test_rule4_descriptors_are_evaluated_separately_overall_is_or() -> None:
    h = harness(BASIC)
    await decide(h, "basic", descriptor(("white", "x")))  # 1/min: now used up
    result = await decide(h, "basic", descriptor(("key1", "a")), descriptor(("white", "x")))
    assert result["overallCode"] == "OVER_LIMIT"
    assert [s["code"] for s in result["statuses"]] == ["OK", "OVER_LIMIT"]
    assert result["statuses"][0]["limitRemaining"] == 1


UNLIMITED = """
domain: unl
descriptors:
  - key: vip
    rate_limit: {unlimited: true}
  - key: other
    rate_limit: {unit: minute, requests_per_unit: 1}
"""


async def test_rule5_unlimited_skips_the_cache_and_reports_max_uint32() -> None:
    h = harness(UNLIMITED)
    for _ in range(2):  # the second time from what the service remembers of the request
        result = await decide(h, "unl", descriptor(("vip", "a")))
        assert result == {
            "overallCode": "OK",
            "statuses": [{"code": "OK", "limitRemaining": 4294967295}],
        }
    assert h.store.increments == []
    assert h.rule("unl.vip")["total_hits"] == 0


SHADOW = """
domain: shadow
descriptors:
  - key: k
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
"""


async def test_rule6_rule_shadow_mode_counts_but_answers_ok() -> None:
    h = harness(SHADOW)
    await decide(h, "shadow", descriptor(("k", "v")))
    result = await decide(h, "shadow", descriptor(("k", "v")), hits=3)
    assert result["overallCode"] == "OK"
    status = result["statuses"][0]
    assert status["code"] == "OK" and "limitRemaining" not in status
    assert status["currentLimit"] == {"requestsPerUnit": 1, "unit": "MINUTE"}
    assert h.rule("shadow.k") == {
        "total_hits": 4,
        "over_limit": 3,
        "near_limit": 1,  # near threshold floor(1 * 0.8) = 0: the first hit was near
        "within_limit": 1,
        "over_limit_with_local_cache": 0,
        "shadow_mode": 3,
    }


async def test_rule7_global_shadow_mode_overrides_the_overall_code_only() -> None:
    h = harness(BASIC, modes=Modes(shadow_mode=True))
    await decide(h, "basic", descriptor(("white", "x")))
    result = await decide(h, "basic", descriptor(("white", "x")), descriptor(("key1", "a")))
    assert result["overallCode"] == "OK"
    assert [s["code"] for s in result["statuses"]] == ["OVER_LIMIT", "OK"]
    assert h.counter("ratelimit.service.global_shadow_mode") == 1


REPLACES = """
domain: replaces
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        rate_limit: {unit: second, requests_per_unit: 5, name: specific_limit}
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        rate_limit:
          unit: second
          requests_per_unit: 10
          replaces: [{name: specific_limit}]
"""


async def test_rule8_replaces_drops_the_named_limit_and_leaves_its_counter() -> None:
    h = harness(REPLACES)
    one = descriptor(("key_1", "value_1"), ("user", "bkthomps"))
    two = descriptor(("key_2", "value_2"), ("user", "bkthomps"))
    alone = await decide(h, "replaces", one)
    assert alone["statuses"][0]["currentLimit"]["requestsPerUnit"] == 5
    both = await decide(h, "replaces", one, two)
    assert both["statuses"][0] == {"code": "OK"}
    assert both["statuses"][1]["currentLimit"]["requestsPerUnit"] == 10
    assert await h.store.value("replaces_key_1_value_1_user_bkthomps_1234") == 1
    assert h.rule("replaces.key_1_value_1.user")["total_hits"] == 1


STOP = """
domain: stop
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: b
    rate_limit: {unit: minute, requests_per_unit: 10}
"""


async def test_rule9_stop_increment_when_over_limit() -> None:
    h = harness(STOP, stop_increment_when_over_limit=True)
    await decide(h, "stop", descriptor(("a", "x")))  # a: 1 of 1
    result = await decide(h, "stop", descriptor(("a", "x")), descriptor(("b", "y")))
    assert [s["code"] for s in result["statuses"]] == ["OVER_LIMIT", "OK"]
    # only the key that would go over is incremented; b's counter stays at 0
    assert await h.store.value("stop_a_x_1200") == 2
    assert await h.store.value("stop_b_y_1200") == 0
    assert len(h.store.gets) == 2


async def test_rule9_without_the_flag_every_counter_is_incremented() -> None:
    h = harness(STOP)
    await decide(h, "stop", descriptor(("a", "x")))
    await decide(h, "stop", descriptor(("a", "x")), descriptor(("b", "y")))
    assert await h.store.value("stop_b_y_1200") == 1
    assert h.store.gets == []


async def test_rule10_unmatched_descriptor_and_unknown_domain_are_ok() -> None:
    h = harness(BASIC)
    assert await decide(h, "basic", descriptor(("nothing", "x"))) == {
        "overallCode": "OK",
        "statuses": [{"code": "OK"}],
    }
    # a whitelisted value: no limit although the key has a default rule
    assert (await decide(h, "basic", descriptor(("white", "listed"))))["statuses"] == [
        {"code": "OK"}
    ]
    unknown = await decide(h, "nope", descriptor(("a", "b")), descriptor(("c", "d")))
    assert unknown == {"overallCode": "OK", "statuses": [{"code": "OK"}, {"code": "OK"}]}
    assert h.counter("ratelimit.service.rate_limit.nope.domain_not_found") == 2
    # an empty descriptor is OK too
    assert (await decide(h, "basic", descriptor()))["statuses"] == [{"code": "OK"}]


METRICS = """
domain: test-domain
descriptors:
  - key: key7
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: wild
    value: foo*
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: route
    value_to_metric: true
    descriptors:
      - key: http_method
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit: {unit: minute, requests_per_unit: 5}
  - key: service
    value: svc/*
    share_threshold: true
    descriptors:
      - key: endpoint
        detailed_metric: true
        rate_limit: {unit: minute, requests_per_unit: 5}
  - key: api
    value: api/*
    share_threshold: true
    value_to_metric: true
    descriptors:
      - key: method
        rate_limit: {unit: minute, requests_per_unit: 5}
  - key: action
    value: read*
    value_to_metric: true
    descriptors:
      - key: resource
        rate_limit: {unit: minute, requests_per_unit: 5}
"""


@pytest.mark.parametrize(
    ("entries", "stats_key"),
    [
        ((("key7", "unspecified_value"),), "test-domain.key7_unspecified_value"),
        ((("wild", "foo123"),), "test-domain.wild_foo*"),
        (
            (("route", "draw"), ("http_method", "GET"), ("subject_id", "123")),
            "test-domain.route_draw.http_method_GET.subject_id",
        ),
        (
            (("route", ""), ("http_method", "GET"), ("subject_id", "1")),
            "test-domain.route.http_method_GET.subject_id",
        ),
        (
            (("service", "svc/a"), ("endpoint", "get")),
            "test-domain.service_svc/*.endpoint_get",
        ),
        ((("api", "api/v1"), ("method", "GET")), "test-domain.api_api/*.method"),
        ((("action", "readfile"), ("resource", "x")), "test-domain.action_readfile.resource"),
    ],
)
async def test_rule12_metric_keys(entries: tuple[tuple[str, str], ...], stats_key: str) -> None:
    h = harness(METRICS)
    await decide(h, "test-domain", descriptor(*entries))
    assert h.rule(stats_key)["total_hits"] == 1
    assert h.rule(stats_key)["within_limit"] == 1


async def test_request_errors_have_the_upstream_messages_and_are_counted() -> None:
    h = harness()
    with pytest.raises(ServiceError, match=r"^rate limit domain must not be empty$"):
        await h.service.should_rate_limit(request("", descriptor(("a", "b"))))
    with pytest.raises(ServiceError, match=r"^rate limit descriptor list must not be empty$"):
        await h.service.should_rate_limit(request("d"))
    with pytest.raises(ServiceError, match=r"^no rate limit configuration loaded$"):
        await h.service.should_rate_limit(request("d", descriptor(("a", "b"))))
    assert h.counter("ratelimit.service.call.should_rate_limit.service_error") == 3


async def test_hits_addend_request_and_per_descriptor() -> None:
    h = harness(STOP)
    result = await decide(h, "stop", descriptor(("b", "x")), descriptor(("b", "y"), hits=0), hits=4)
    assert [s.get("limitRemaining", 0) for s in result["statuses"]] == [6, 10]
    assert await h.store.value("stop_b_x_1200") == 4
    assert await h.store.value("stop_b_y_1200") == 0  # 0 checks without consuming
    result = await decide(h, "stop", descriptor(("b", "x"), hits=7))
    assert result["statuses"][0]["code"] == "OVER_LIMIT"
    assert h.rule("stop.b")["total_hits"] == 11


async def test_limit_override_applies_to_known_domains_with_its_own_stats_key() -> None:
    h = harness(BASIC)
    result = await decide(h, "basic", descriptor(("any", "thing"), limit=(1, SECOND)))
    assert result["statuses"][0]["currentLimit"] == {"requestsPerUnit": 1, "unit": "SECOND"}
    result = await decide(h, "basic", descriptor(("any", "thing"), limit=(1, SECOND)))
    assert result["statuses"][0]["code"] == "OVER_LIMIT"
    assert h.rule("basic.any_thing")["over_limit"] == 1
    assert (await decide(h, "unknown", descriptor(("a", "b"), limit=(1, SECOND))))["statuses"] == [
        {"code": "OK"}
    ]
    with pytest.raises(ServiceError):
        await decide(h, "basic", descriptor(("a", "b"), limit=(1, 0)))


async def test_a_request_seen_before_is_decided_like_a_new_one() -> None:
    """The service remembers what a request's bytes decide to (limits, counter keys, hits);
    counting, the statistics and a reload still apply each time."""
    hourly = """
domain: d
descriptors:
  - key: k
    rate_limit: {unit: hour, requests_per_unit: 9}
"""
    h = harness(hourly)
    seen = descriptor(("k", "a"))
    for request_hits, remaining in ((0, 8), (0, 7), (2, 5)):
        result = await decide(h, "d", seen, hits=request_hits)
        assert result["statuses"][0]["limitRemaining"] == remaining
    own_addend = await decide(h, "d", descriptor(("k", "a"), hits=0), hits=5)
    assert own_addend["statuses"][0]["limitRemaining"] == 5
    assert await h.store.value("d_k_a_0") == 4
    assert h.rule("d.k")["total_hits"] == 4
    # a bad descriptor fails every time, and an unknown domain is counted every time
    too_many = descriptor(*[(f"k{i}", "v") for i in range(65)])
    for count in (1, 2):
        with pytest.raises(ServiceError, match="must not exceed 64 entries"):
            await decide(h, "d", too_many)
        assert h.counter("ratelimit.service.call.should_rate_limit.service_error") == count
        await decide(h, "nope", seen)
        assert h.counter("ratelimit.service.rate_limit.nope.domain_not_found") == count
    # new rules: what was remembered under the old ones is forgotten
    h.service.set_rules(rules(hourly.replace("unit: hour", "unit: minute")))
    result = await decide(h, "d", seen)
    assert result["statuses"][0]["currentLimit"] == {"requestsPerUnit": 9, "unit": "MINUTE"}
    assert result["statuses"][0]["limitRemaining"] == 8
    assert await h.store.value("d_k_a_1200") == 1


async def test_duration_until_reset_and_window_keys() -> None:
    h = harness(BASIC, now=2222)
    result = await decide(h, "basic", descriptor(("key1", "a")))
    assert result["statuses"][0]["durationUntilReset"] == "58s"
    h.clock.now = 1_000_000
    deep = await decide(h, "basic", descriptor(("nested", "a"), ("sub", "b")))
    assert deep["statuses"][0]["durationUntilReset"] == "800s"
    assert h.store.increments[-1][0].key == "basic_nested_a_sub_b_997200"
    assert h.store.increments[-1][0].expire_seconds == 3600


async def test_expiration_jitter_adds_up_to_its_maximum_to_each_expiry() -> None:
    h = harness(BASIC, expiration_jitter_max_seconds=300)
    for i in range(200):
        await decide(h, "basic", descriptor(("key1", f"v{i}")))
    expiries = [increments[0].expire_seconds for increments in h.store.increments]
    assert all(60 <= expiry < 60 + 300 for expiry in expiries)  # a minute's window and jitter
    assert len(set(expiries)) > 50


async def test_cache_key_prefix() -> None:
    h = harness(BASIC, cache_key_prefix="prefix:")
    await decide(h, "basic", descriptor(("key1", "value1")))
    assert h.store.increments[0][0].key == "prefix:basic_key1_value1_1234"
