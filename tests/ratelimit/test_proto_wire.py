"""The hand-written protobuf encoding of gRPC answers is upb's, byte for byte."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from google.protobuf.internal import encoder  # type: ignore[attr-defined]

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2
from handlers.ratelimit.limiter import response_message
from handlers.ratelimit.proto_wire import current_limit_wire, decision_wire, varint
from handlers.ratelimit.settings import Modes
from tests.ratelimit.conftest import every_kind_of_limit
from tests.ratelimit.test_proto_json import all_kinds_decisions

_UINT64 = (1 << 64) - 1
BOUNDARIES = [
    0, 1, 2, 127, 128, 129, 255, 16383, 16384, (1 << 21) - 1, 1 << 21, (1 << 28) - 1, 1 << 28,
    (1 << 32) - 1, 1 << 32, (1 << 63) - 1, 1 << 63, _UINT64,
]  # fmt: skip


@pytest.mark.parametrize("value", [*BOUNDARIES, -1, -2, -(1 << 63)])
def test_varint_is_protobufs(value: int) -> None:
    assert varint(value) == encoder._VarintBytes(value & _UINT64)


def test_current_limit_wire_is_the_status_field_upb_writes() -> None:
    for limit in every_kind_of_limit():
        if limit is None:
            continue
        status = rls_pb2.RateLimitResponse.DescriptorStatus()
        status.current_limit.CopyFrom(limit.current)
        assert current_limit_wire(limit.current) == status.SerializeToString()
        assert limit.current_wire == status.SerializeToString()


def _written_and_upbs(
    overall: Any, codes: Any, remaining: Any, limits: Any, now: int
) -> tuple[bytes, bytes]:
    """decision_wire's bytes and upb's for the message of the same values (codes outside the
    enum included: proto3 enums are open)."""
    message = response_message(overall, codes, remaining, limits, now)
    return decision_wire(overall, codes, remaining, limits, now), message.SerializeToString()


def test_decision_wire_writes_every_kind_of_status_as_upb_does() -> None:
    limits = every_kind_of_limit()
    codes = [0, 1, 2, 7]
    remaining = [0, 1, 127, 128, (1 << 32) - 1]
    # times at which windows of every unit have from 1 second to all of it left
    times = [0, 1, 59, 1_700_000_000, 1_700_003_599, (1 << 31) - 1]
    checked = 0
    for status in itertools.product(codes, remaining, limits):
        for overall, now in itertools.product((0, 1, 2), times):
            code, left, limit = status
            written, upbs = _written_and_upbs(overall, [code], [left], [limit], now)
            assert written == upbs, (overall, status, now)
            checked += 1
    assert checked > 2000
    # several statuses in one answer
    for trio in itertools.combinations(itertools.product(codes[:3], remaining[:3], limits), 3):
        columns = [list(column) for column in zip(*trio, strict=True)]
        written, upbs = _written_and_upbs(2, *columns, now=1_700_000_123)
        assert written == upbs, trio
    assert _written_and_upbs(0, [], [], [], 0) == (b"", b"")


@pytest.mark.parametrize("modes", [Modes(), Modes(shadow_mode=True), Modes(quota_mode=True)])
async def test_decision_wire_of_real_decisions_is_their_message(modes: Modes) -> None:
    for decision in await all_kinds_decisions(modes):
        overall, codes, remaining, limits, now, response, _ = decision
        assert response is not None
        wire = decision_wire(overall, codes, remaining, limits, now)
        assert wire == response.SerializeToString()
        assert rls_pb2.RateLimitResponse.FromString(wire) == response


def test_decision_wire_writes_issue_23_durations_as_upb_does() -> None:
    """Statuses of issue 23's limits carry their own seconds until reset (0 included: a present,
    empty Duration), beside statuses whose window says it."""
    limits = [limit for limit in every_kind_of_limit() if limit is not None][:6]
    checked = 0
    for seconds in (0, 1, 127, 128, 86_400, 31_536_000, 9_007_199_254):
        for code, left in itertools.product((0, 1, 2), (0, 5, (1 << 32) - 1)):
            columns: Any = ([code, 1], [left, 3], [limits[checked % 6], limits[0]])
            for resets in ({0: seconds}, {1: seconds}, {0: seconds, 1: 0}):
                message = response_message(2, *columns, 1_700_000_123, resets)
                written = decision_wire(2, *columns, 1_700_000_123, resets)
                assert written == message.SerializeToString(), (seconds, code, left, resets)
                checked += 1
    assert checked > 150
