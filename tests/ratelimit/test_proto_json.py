"""The hand-written proto3 JSON codec of /json agrees with protobuf's ``json_format``: the
same message for every body both accept, a rejection wherever ``json_format`` rejects, and
the same output for every response shape."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from google.protobuf import json_format, struct_pb2

from generated.proto.envoy.config.core.v3 import base_pb2
from generated.proto.envoy.service.ratelimit.v3 import rls_pb2
from handlers.ratelimit.limiter import response_message
from handlers.ratelimit.proto_json import decision_json, parse_request, response_json
from handlers.ratelimit.service import Decision
from handlers.ratelimit.settings import Modes
from tests.ratelimit.conftest import descriptor, every_kind_of_limit, harness, request

ACCEPTED = [
    {"domain": "d", "descriptors": [{"entries": [{"key": "k", "value": "v"}]}]},
    {"domain": "d", "hits_addend": 3, "descriptors": [{"entries": [{"key": "k"}]}]},
    {"domain": "d", "hitsAddend": "7", "descriptors": [{"hitsAddend": "0"}]},
    {"domain": "d", "descriptors": [{"hits_addend": 18446744073709551615}]},
    {"domain": "d", "descriptors": [{"limit": {"requests_per_unit": 3, "unit": "HOUR"}}]},
    {"domain": "d", "descriptors": [{"limit": {"requestsPerUnit": 3, "unit": 5}}]},
    {"domain": "d", "descriptors": [{"limit": {"unit": 42}}]},
    {"domain": "d", "descriptors": [{"limit": {}}]},
    {"domain": "d", "descriptors": [{"limit": None, "hitsAddend": None, "entries": None}]},
    {"domain": None, "descriptors": None, "hitsAddend": None},
    {"hitsAddend": 2.0},
    {"hitsAddend": "1e2"},
    {"hitsAddend": 4294967295},
    {},
    {"domain": "ünïcødé ✓", "descriptors": [{"entries": [{"key": "", "value": ""}]}]},
]

REJECTED = [
    b"",
    b"null",
    b'"x"',
    b"{bad",
    b"\xff\xfe",
    b'{"unknown": 1}',
    b'{"domain": 1}',
    b'{"domain": "d", "hitsAddend": -1}',
    b'{"hitsAddend": 4294967296}',
    b'{"hitsAddend": 1.5}',
    b'{"hitsAddend": true}',
    b'{"hitsAddend": "x"}',
    b'{"hitsAddend": " 1"}',
    b'{"descriptors": {}}',
    b'{"descriptors": [1]}',
    b'{"descriptors": [{"entries": [{"key": 1}]}]}',
    b'{"descriptors": [{"entries": [{"key": "k", "other": "x"}]}]}',
    b'{"descriptors": [{"entries": "k"}]}',
    b'{"descriptors": [{"limit": {"unit": "WEEK"}}]}',
    b'{"descriptors": [{"limit": {"unit": "minute"}}]}',
    b'{"descriptors": [{"limit": {"requestsPerUnit": -1}}]}',
    b'{"descriptors": [{"limit": 5}]}',
    b'{"descriptors": [{"hitsAddend": -1}]}',
    b'{"descriptors": [{"hitsAddend": 18446744073709551616}]}',
]


# json_format accepts these; Go's protojson (the upstream's parser, which /json follows)
# rejects a top-level array, a field given under both names, and a boolean enum.
GO_REJECTS = [
    b"[]",
    b'{"hitsAddend": 1, "hits_addend": 2}',
    b'{"descriptors": [{"limit": {"unit": true}}]}',
]


@pytest.mark.parametrize("document", ACCEPTED, ids=[json.dumps(d)[:60] for d in ACCEPTED])
def test_accepted_bodies_give_the_same_message(document: dict[str, object]) -> None:
    body = json.dumps(document).encode()
    expected = json_format.Parse(body, rls_pb2.RateLimitRequest())
    assert parse_request(body) == expected


@pytest.mark.parametrize("body", REJECTED, ids=[repr(b)[:60] for b in REJECTED])
def test_rejected_bodies(body: bytes) -> None:
    with pytest.raises((json_format.ParseError, ValueError, TypeError)):
        json_format.Parse(body, rls_pb2.RateLimitRequest())
    with pytest.raises(ValueError):
        parse_request(body)


@pytest.mark.parametrize("body", GO_REJECTS)
def test_rejected_as_go_protojson_does(body: bytes) -> None:
    with pytest.raises(ValueError):
        parse_request(body)


def _responses() -> list[rls_pb2.RateLimitResponse]:
    r = rls_pb2.RateLimitResponse
    full = r(overall_code=r.OVER_LIMIT)
    full.statuses.add(
        code=r.OVER_LIMIT,
        current_limit=r.RateLimit(name="n", requests_per_unit=5, unit=r.RateLimit.WEEK),
    ).duration_until_reset.seconds = 58
    full.statuses.add(code=r.OK, limit_remaining=4294967295)
    full.statuses.add()
    full.statuses.add(code=r.OK, current_limit=r.RateLimit()).duration_until_reset.nanos = 5
    full.response_headers_to_add.add(key="RateLimit-Limit", value="5")
    full.response_headers_to_add.add(key="X", raw_value=b"\x00\x01")
    full.request_headers_to_add.add(key="A", value="")
    metadata = struct_pb2.Struct()
    metadata.update({"domain": "d", "descriptors": [{"entries": ["k=v"]}], "hitsAddend": 2})
    with_metadata = r(overall_code=r.OK, dynamic_metadata=metadata, raw_body=b"raw")
    with_metadata.quota.requests = 3
    with_metadata.statuses.add().quota.id = "q"
    return [
        r(),
        r(overall_code=r.OK),
        full,
        with_metadata,
        r(response_headers_to_add=[base_pb2.HeaderValue()]),
    ]


@pytest.mark.parametrize("response", _responses())
def test_responses_match_json_format(response: rls_pb2.RateLimitResponse) -> None:
    assert json.loads(response_json(response)) == json_format.MessageToDict(response)


def test_response_json_is_compact_in_declaration_order_with_strings_escaped() -> None:
    r = rls_pb2.RateLimitResponse
    response = r(overall_code=r.OVER_LIMIT)
    limit = r.RateLimit(name='q"\\ ✓\n', requests_per_unit=5, unit=r.RateLimit.WEEK)
    response.statuses.add(code=r.OVER_LIMIT, current_limit=limit).duration_until_reset.seconds = 58
    response.statuses.add(code=7)  # proto3 enums are open: a number outside it stays a number
    response.statuses.add(current_limit=r.RateLimit(unit=9))
    expected = (
        '{"overallCode":"OVER_LIMIT","statuses":[{"code":"OVER_LIMIT","currentLimit":'
        r'{"name":"q\"\\ ✓\n","requestsPerUnit":5,"unit":"WEEK"},"durationUntilReset":"58s"},'
        '{"code":7},{"currentLimit":{"unit":9}}]}'
    )
    assert response_json(response) == expected.encode()
    assert json.loads(response_json(response)) == json_format.MessageToDict(response)


ALL_KINDS = r"""
domain: all
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 2, name: "q\"\\ ✓"}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: unl
    rate_limit: {unlimited: true}
  - key: k1
    descriptors:
      - key: user
        rate_limit: {unit: hour, requests_per_unit: 5, name: specific}
  - key: k2
    descriptors:
      - key: user
        rate_limit: {unit: day, requests_per_unit: 3, replaces: [{name: specific}]}
"""


ALL_KINDS_REQUESTS = [
    request("all", descriptor(("a", "x"))),
    request("all", descriptor(("shadow", "x")), descriptor(("unl", "x"))),
    request("all", descriptor(("k1", "v"), ("user", "u")), descriptor(("k2", "v"), ("user", "u"))),
    request("all", descriptor(("none", "x")), descriptor(("a", "y"), limit=(1, 4))),
    request("other", descriptor(("a", "x"))),
    request("all", descriptor(("a", "z"), hits=3), descriptor(("k1", "v"), ("user", "w"))),
]
"""Requests of ALL_KINDS that, made three times, give every kind of status: OK and over the
limit, shadow mode, unlimited, replaced, unmatched, an override, an unknown domain."""


async def all_kinds_decisions(modes: Modes) -> list[Decision]:
    """ALL_KINDS_REQUESTS decided three times under ``modes`` (a local cache on), each with its
    response message; checks that every kind of status and the local cache came up."""
    h = harness(ALL_KINDS, modes=modes, local_cache_bytes=1 << 20)
    decisions = []
    for _ in range(3):
        for each in ALL_KINDS_REQUESTS:
            decision = await h.service.decide(each)
            assert decision.response is not None
            decisions.append(decision)
    everything = b"".join(response_json(d.response) for d in decisions if d.response)
    for kind in (
        b'"OVER_LIMIT"',
        b'"limitRemaining":4294967295',
        b'"name":"q\\"\\\\ \xe2\x9c\x93"',
    ):
        assert kind in everything
    assert h.counter("ratelimit.service.rate_limit.all.a.over_limit_with_local_cache") > 0
    return decisions


@pytest.mark.parametrize("modes", [Modes(), Modes(shadow_mode=True), Modes(quota_mode=True)])
async def test_decision_json_writes_what_response_json_writes(modes: Modes) -> None:
    for decision in await all_kinds_decisions(modes):
        overall, codes, remaining, limits, now, response, _ = decision
        assert response is not None
        assert decision_json(overall, codes, remaining, limits, now) == response_json(response)


def test_decision_json_writes_every_kind_of_status_as_response_json_does() -> None:
    limits = every_kind_of_limit()
    codes = [0, 1, 2, 7]  # 7: outside the enum, written as a number
    remaining = [0, 1, (1 << 32) - 1]
    checked = 0
    for overall in (0, 1, 2, 7):
        for status in itertools.product(codes, remaining, limits):
            for now in (0, 59, 1_700_000_123):
                columns: Any = [[value] for value in status]
                message = response_message(overall, *columns, now)  # type: ignore[arg-type]
                written = decision_json(overall, *columns, now)
                assert written == response_json(message), (overall, status, now)
                checked += 1
        pairs: Any = itertools.combinations(itertools.product(codes, remaining, limits[:3]), 2)
        for pair in pairs:
            columns = [list(column) for column in zip(*pair, strict=True)]
            message = response_message(overall, *columns, 1_700_000_123)  # type: ignore[arg-type]
            assert decision_json(overall, *columns, 1_700_000_123) == response_json(message)
        empty = response_message(overall, [], [], [], 0)  # type: ignore[arg-type]
        assert decision_json(overall, [], [], [], 0) == response_json(empty)
    assert checked > 1000


async def test_the_message_is_left_unmade_only_where_not_asked_for() -> None:
    h = harness(ALL_KINDS)
    one = request("all", descriptor(("a", "x")))
    assert (await h.service.decide(one, message=False)).response is None
    assert (await h.service.decide(one)).response is not None


@pytest.mark.parametrize(
    "modes", [Modes(response_headers_enabled=True), Modes(response_dynamic_metadata=True)]
)
async def test_a_decision_with_headers_or_metadata_has_its_message(modes: Modes) -> None:
    h = harness(ALL_KINDS, modes=modes)
    decision = await h.service.decide(request("all", descriptor(("a", "x"))), message=False)
    assert decision.response is not None
    assert decision.response.response_headers_to_add or decision.response.HasField(
        "dynamic_metadata"
    )


def test_decision_json_writes_issue_23_durations_as_response_json_does() -> None:
    limits = [limit for limit in every_kind_of_limit() if limit is not None][:6]
    checked = 0
    for seconds in (0, 1, 59, 86_400, 31_536_000):
        for code, left in itertools.product((0, 1, 2), (0, 5, (1 << 32) - 1)):
            columns: Any = ([code, 1], [left, 3], [limits[checked % 6], limits[0]])
            for resets in ({0: seconds}, {1: seconds}, {0: seconds, 1: 0}):
                message = response_message(2, *columns, 1_700_000_123, resets)
                written = decision_json(2, *columns, 1_700_000_123, resets)
                assert written == response_json(message), (seconds, code, left, resets)
                checked += 1
    assert checked > 100
