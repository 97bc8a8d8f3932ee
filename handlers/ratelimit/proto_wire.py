"""The protobuf encoding of a decision's ``RateLimitResponse``, written from its plain values.

gRPC answers are written here rather than through a message: making a ``RateLimitResponse``
(each status added, its current limit copied in, its reset duration set) and serializing it
cost more than counting the hits. The bytes are those upb writes for
:func:`~handlers.ratelimit.limiter.response_message` of the same values: fields in number
order, zero values left out. ``tests/ratelimit/test_proto_wire.py`` compares the two over every
kind of status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2

_UINT64 = (1 << 64) - 1

# tags: field number << 3 | wire type (0 varint, 2 length-delimited)
_OVERALL_CODE = b"\x08"  # RateLimitResponse.overall_code = 1
_STATUS = b"\x12"  # RateLimitResponse.statuses = 2
_CODE = b"\x08"  # DescriptorStatus.code = 1
_CURRENT_LIMIT = b"\x12"  # DescriptorStatus.current_limit = 2
_LIMIT_REMAINING = b"\x18"  # DescriptorStatus.limit_remaining = 3
_DURATION_UNTIL_RESET = b"\x22"  # DescriptorStatus.duration_until_reset = 4
_SECONDS = b"\x08"  # google.protobuf.Duration.seconds = 1

_SMALL = [bytes((value,)) for value in range(0x80)]
_CODE_FIELD = {code: _CODE + _SMALL[code] for code in (1, 2)}  # OK, OVER_LIMIT


def varint(value: int) -> bytes:
    """``value`` as a protobuf varint (a negative one as its 64-bit two's complement, as an
    enum or int64 field holds it)."""
    if 0 <= value < 0x80:
        return _SMALL[value]
    value &= _UINT64
    if value < 1 << 14:
        return bytes((value & 0x7F | 0x80, value >> 7))
    if value < 1 << 21:
        return bytes((value & 0x7F | 0x80, value >> 7 & 0x7F | 0x80, value >> 14))
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class WireLimit(Protocol):
    """What :func:`decision_wire` reads of a status's limit (a
    :class:`~handlers.ratelimit.matching.MatchedLimit`, which keeps its ``current_limit``
    written by :func:`current_limit_wire`)."""

    @property
    def divider(self) -> int:
        """The limit's window in seconds."""
        ...

    @property
    def current_wire(self) -> bytes:
        """The status's ``current_limit`` field, tag and length included."""
        ...


def current_limit_wire(limit: rls_pb2.RateLimitResponse.RateLimit) -> bytes:
    """A status's ``current_limit`` field (tag, length and the message)."""
    body = limit.SerializeToString(deterministic=True)
    return _CURRENT_LIMIT + varint(len(body)) + body


def decision_wire(
    overall_code: int,
    codes: Sequence[int],
    remaining: Sequence[int],
    limits: Sequence[WireLimit | None],
    now: int,
    resets: Mapping[int, int] | None = None,
) -> bytes:
    """``response_message(overall_code, codes, remaining, limits, now, resets)
    .SerializeToString()``, written without the message (this runs for every gRPC answer
    without headers or metadata). ``resets``: the seconds until reset of issue 23's
    statuses, by index (their limits' windows do not say it)."""
    parts = [_OVERALL_CODE + varint(overall_code)] if overall_code else []
    for index, (code, left, limit) in enumerate(zip(codes, remaining, limits, strict=True)):
        status = (_CODE_FIELD.get(code) or _CODE + varint(code)) if code else b""
        if limit is not None:
            status += limit.current_wire
        if left:
            status += _LIMIT_REMAINING + varint(left)
        if limit is not None:
            if resets is not None and index in resets:
                reset = resets[index]
                if not reset:  # a present, empty Duration, as upb writes seconds = 0
                    status += _DURATION_UNTIL_RESET + b"\x00"
                    parts.append(_STATUS + varint(len(status)) + status)
                    continue
            else:
                divider = limit.divider  # seconds_until_reset (at least 1), without a call
                reset = divider - now % divider
            seconds = varint(reset)
            status += _DURATION_UNTIL_RESET + _SMALL[len(seconds) + 1] + _SECONDS + seconds
        parts.append(_STATUS + varint(len(status)) + status)
    return b"".join(parts)
