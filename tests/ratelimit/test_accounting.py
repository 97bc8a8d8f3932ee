"""Stats accounting, near-limit float32 arithmetic, the local over-limit cache, quota mode,
response headers and dynamic metadata: the reference's worked examples."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from handlers.ratelimit.backends.base import Increment
from handlers.ratelimit.limiter import near_limit_threshold
from handlers.ratelimit.settings import Modes
from tests.ratelimit.conftest import Harness, descriptor, harness, request

RULE = """
domain: domain
descriptors:
  - key: k
    value: v
    rate_limit: {unit: second, requests_per_unit: 20}
  - key: eight
    rate_limit: {unit: second, requests_per_unit: 8}
  - key: ten
    rate_limit: {unit: second, requests_per_unit: 10}
  - key: hourly
    rate_limit: {unit: hour, requests_per_unit: 15}
"""


async def preset(h: Harness, key: str, value: int) -> None:
    if value:
        await h.store.inner.increment([Increment(key, value, 60, False)])


async def one(h: Harness, d: Any, hits: int = 0) -> dict[str, Any]:
    response = await h.service.should_rate_limit(request("domain", d, hits=hits))
    status: dict[str, Any] = json_format.MessageToDict(response.statuses[0])
    return status


@pytest.mark.parametrize(
    ("hits", "after", "code", "remaining", "over", "near", "within"),
    [
        (3, 5, "OK", 15, 0, 0, 3),
        (3, 19, "OK", 1, 0, 3, 3),
        (3, 22, "OVER_LIMIT", 0, 2, 1, 0),
        (7, 22, "OVER_LIMIT", 0, 2, 4, 0),
    ],
)
async def test_accounting_table(
    hits: int, after: int, code: str, remaining: int, over: int, near: int, within: int
) -> None:
    h = harness(RULE)
    await preset(h, "domain_k_v_1234", after - hits)
    status = await one(h, descriptor(("k", "v")), hits=hits)
    assert status["code"] == code
    assert status.get("limitRemaining", 0) == remaining
    stats = h.rule("domain.k_v")
    assert (stats["over_limit"], stats["near_limit"], stats["within_limit"]) == (over, near, within)
    assert stats["total_hits"] == hits


async def test_more_accounting_cases() -> None:
    h = harness(RULE)
    await preset(h, "domain_eight_x_1234", 5)
    status = await one(h, descriptor(("eight", "x")), hits=2)
    assert (status["code"], status["limitRemaining"]) == ("OK", 1)
    assert h.rule("domain.eight")["near_limit"] == 1  # threshold 6
    await preset(h, "domain_ten_x_1234", 27)
    status = await one(h, descriptor(("ten", "x")), hits=3)
    assert status["code"] == "OVER_LIMIT"
    assert (h.rule("domain.ten")["over_limit"], h.rule("domain.ten")["near_limit"]) == (3, 0)


def test_near_limit_threshold_is_float32() -> None:
    assert near_limit_threshold(20, 0.8) == 16
    assert near_limit_threshold(8, 0.8) == 6
    assert near_limit_threshold(15, 0.8) == 12
    # float64: 90 * 0.7 = 62.99999999999999 -> 62; float32 rounds the product to 63.0
    assert near_limit_threshold(90, 0.7) == 63


async def test_local_cache_sequence_answers_without_the_store() -> None:
    key = "domain_hourly_x_997200"
    # the reference's sequence: 11 -> OK 4, 13 -> OK 2 (near 1), 16 -> OVER
    h2 = harness(RULE, local_cache_bytes=1 << 20, now=1_000_000)
    statuses = []
    for before in (10, 12, 15):
        h2.store.inner = type(h2.store.inner)()
        await preset(h2, key, before)
        statuses.append(await one(h2, descriptor(("hourly", "x"))))
    assert [(s["code"], s.get("limitRemaining", 0)) for s in statuses] == [
        ("OK", 4),
        ("OK", 2),
        ("OVER_LIMIT", 0),
    ]
    calls = len(h2.store.increments)
    fourth = await one(h2, descriptor(("hourly", "x")))
    assert fourth["code"] == "OVER_LIMIT"
    assert len(h2.store.increments) == calls  # no store command at all
    assert h2.rule("domain.hourly") == {
        "total_hits": 4,
        "over_limit": 2,
        "near_limit": 1,
        "within_limit": 2,
        "over_limit_with_local_cache": 1,
        "shadow_mode": 0,
    }
    assert h2.counter("ratelimit.localcache.hitCount") == 1


QUOTA = """
domain: q
descriptors:
  - key: regular
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: quota
    quota_mode: true
    metadata: {name: service_1, nested: {a: 1}}
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: quota2
    quota_mode: true
    metadata: {name: service_2, some_other_name: service_2, nested: {b: 2}}
    rate_limit: {unit: minute, requests_per_unit: 1}
"""


async def exhaust(h: Harness, *keys: tuple[str, str]) -> None:
    for key in keys:
        await h.service.should_rate_limit(request("q", descriptor(key)))


@pytest.mark.parametrize(
    ("over", "descriptors", "overall"),
    [
        ({"regular"}, ["regular", "quota"], "OVER_LIMIT"),
        ({"quota"}, ["regular", "quota"], "OVER_LIMIT"),
        (set(), ["regular", "quota"], "OK"),
        ({"quota", "quota2"}, ["quota", "quota2"], "OVER_LIMIT"),
        ({"quota"}, ["quota", "quota2"], "OK"),
    ],
)
async def test_quota_mode_overall(over: set[str], descriptors: list[str], overall: str) -> None:
    h = harness(QUOTA)
    await exhaust(h, *[(key, "x") for key in over])
    response = await h.service.should_rate_limit(
        request("q", *[descriptor((key, "x")) for key in descriptors])
    )
    assert json_format.MessageToDict(response)["overallCode"] == overall


async def test_global_quota_and_shadow_modes() -> None:
    h = harness(QUOTA, modes=Modes(quota_mode=True))
    await exhaust(h, ("regular", "x"))
    response = await h.service.should_rate_limit(
        request("q", descriptor(("regular", "x")), descriptor(("quota", "x")))
    )
    assert response.overall_code == response.OK  # one of two quota descriptors over
    await exhaust(h, ("quota", "x"))
    response = await h.service.should_rate_limit(
        request("q", descriptor(("regular", "x")), descriptor(("quota", "x")))
    )
    assert response.overall_code == response.OVER_LIMIT


async def test_response_headers_pick_the_closest_or_the_over_limit_status() -> None:
    modes = Modes(
        response_headers_enabled=True,
        limit_header="A-Ratelimit-Limit",
        remaining_header="A-Ratelimit-Remaining",
        reset_header="A-Ratelimit-Reset",
    )
    h = harness(RULE, modes=modes, now=2222)
    response = await h.service.should_rate_limit(
        request("domain", descriptor(("eight", "x")), descriptor(("ten", "y")))
    )
    headers = [(x.key, x.value) for x in response.response_headers_to_add]
    assert headers == [
        ("A-Ratelimit-Limit", "8"),
        ("A-Ratelimit-Remaining", "7"),
        ("A-Ratelimit-Reset", "1"),
    ]
    h2 = harness(
        "domain: m\ndescriptors:\n  - key: k\n"
        "    rate_limit: {unit: minute, requests_per_unit: 10}\n",
        modes=modes,
        now=2222,
    )
    response = await h2.service.should_rate_limit(request("m", descriptor(("k", "v"), hits=11)))
    assert [(x.key, x.value) for x in response.response_headers_to_add] == [
        ("A-Ratelimit-Limit", "10"),
        ("A-Ratelimit-Remaining", "0"),
        ("A-Ratelimit-Reset", "58"),
    ]
    off = harness(RULE, now=2222)
    response = await off.service.should_rate_limit(request("domain", descriptor(("eight", "x"))))
    assert len(response.response_headers_to_add) == 0


async def test_dynamic_metadata_merges_passed_rules_first_wins() -> None:
    h = harness(QUOTA, modes=Modes(response_dynamic_metadata=True))
    response = await h.service.should_rate_limit(
        request(
            "q",
            descriptor(("quota", "x"), hits=1),
            descriptor(("quota2", "y"), hits=1),
            hits=2,
        )
    )
    metadata = json_format.MessageToDict(response.dynamic_metadata)
    assert metadata == {
        "domain": "q",
        "descriptors": [
            {"entries": ["quota=x"], "hitsAddend": 1.0},
            {"entries": ["quota2=y"], "hitsAddend": 1.0},
        ],
        "hitsAddend": 2.0,
        "metadata": {
            "name": "service_1",
            "some_other_name": "service_2",
            "nested": {"a": 1.0, "b": 2.0},
        },
    }
