"""proto3 JSON for ``/json``, as Go's ``protojson`` reads and writes these messages.

Written for the four request messages and the response, because ``json_format`` walks
descriptors in Python and costs several times the decision itself. The rules are the
protojson ones: lowerCamel or proto field names (not both), ``null`` means absent, unknown
fields are errors, integers may be JSON numbers with an integral value or decimal strings,
enums are names or numbers, output omits zero values and prints enums by name.
``tests/ratelimit/test_proto_json.py`` checks it against ``json_format`` case by case.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring as _json_string
from typing import Any, Protocol

from google.protobuf import json_format

from generated.proto.envoy.config.core.v3 import base_pb2
from generated.proto.envoy.service.ratelimit.v3 import rls_pb2

_UINT32 = (1 << 32) - 1
_UINT64 = (1 << 64) - 1
_OVERRIDE_UNITS = {
    "UNKNOWN": 0,
    "SECOND": 1,
    "MINUTE": 2,
    "HOUR": 3,
    "DAY": 4,
    "MONTH": 5,
    "YEAR": 6,
}
# enum values as JSON (quoted names); a number outside the enum is written as the number
_CODE_JSON = {0: '"UNKNOWN"', 1: '"OK"', 2: '"OVER_LIMIT"'}
_CODE_MEMBER = {code: '"code":' + text for code, text in _CODE_JSON.items() if code}
_UNIT_JSON = {
    number: f'"{name}"'
    for number, name in enumerate(
        ["UNKNOWN", "SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR", "WEEK"]
    )
}


class ProtoJsonError(ValueError):
    """The body is not a valid proto3 JSON ``RateLimitRequest``."""


def _fields(value: object, names: dict[str, str], where: str) -> dict[str, Any]:
    """The object's fields by proto name (``null`` ones dropped); errors on unknown fields
    and on a field given under both of its names."""
    if not isinstance(value, dict):
        raise ProtoJsonError(f"{where}: expected an object")
    # the common case: every key known, no null, no field under both of its names
    if (
        value.keys() <= names.keys()
        and None not in value.values()
        and (len(value) < 2 or len({names[key] for key in value}) == len(value))
    ):
        return {names[key]: item for key, item in value.items()}
    fields: dict[str, Any] = {}
    for key, item in value.items():
        name = names.get(key)
        if name is None:
            raise ProtoJsonError(f"{where}: unknown field {key!r}")
        if name in fields:
            raise ProtoJsonError(f"{where}: duplicate field {key!r}")
        fields[name] = item
    return {k: v for k, v in fields.items() if v is not None}


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ProtoJsonError(f"{where}: expected a string")
    return value


def _integer(value: object, maximum: int, where: str) -> int:
    if isinstance(value, bool):
        raise ProtoJsonError(f"{where}: expected an integer")
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.isascii() and value.strip() == value and value:
        try:
            parsed = float(value) if any(c in value for c in ".eE") else int(value, 10)
        except ValueError:
            raise ProtoJsonError(f"{where}: expected an integer") from None
        if isinstance(parsed, float) and not parsed.is_integer():
            raise ProtoJsonError(f"{where}: expected an integer")
        number = int(parsed)
    else:
        raise ProtoJsonError(f"{where}: expected an integer")
    if not 0 <= number <= maximum:
        raise ProtoJsonError(f"{where}: out of range")
    return number


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ProtoJsonError(f"{where}: expected an array")
    return value


_REQUEST = {
    "domain": "domain",
    "descriptors": "descriptors",
    "hitsAddend": "hits_addend",
    "hits_addend": "hits_addend",
}
_DESCRIPTOR = {
    "entries": "entries",
    "limit": "limit",
    "hitsAddend": "hits_addend",
    "hits_addend": "hits_addend",
}
_ENTRY = {"key": "key", "value": "value"}
_ENTRY_KEYS = _ENTRY.keys()
_OVERRIDE = {
    "requestsPerUnit": "requests_per_unit",
    "requests_per_unit": "requests_per_unit",
    "unit": "unit",
}


def parse_request(body: bytes) -> rls_pb2.RateLimitRequest:
    """The ``RateLimitRequest`` in ``body``; raises :class:`ProtoJsonError` (or another
    ``ValueError`` for bytes that are not JSON)."""
    document = json.loads(body)
    fields = _fields(document, _REQUEST, "RateLimitRequest")
    request = rls_pb2.RateLimitRequest(
        domain=_string(fields.get("domain", ""), "domain"),
        hits_addend=_integer(fields.get("hits_addend", 0), _UINT32, "hitsAddend"),
    )
    add = request.descriptors.add
    for raw in _list(fields.get("descriptors", []), "descriptors"):
        if raw is None:
            raise ProtoJsonError("descriptors: null element")
        item = _fields(raw, _DESCRIPTOR, "RateLimitDescriptor")
        descriptor = add()
        add_entry = descriptor.entries.add
        for raw_entry in _list(item.get("entries", []), "entries"):
            # the common shape first: {"key": "...", "value": "..."} with strings
            if type(raw_entry) is dict and raw_entry.keys() <= _ENTRY_KEYS:
                key = raw_entry.get("key", "")
                value = raw_entry.get("value", "")
                if type(key) is str and type(value) is str:
                    add_entry(key=key, value=value)
                    continue
            if raw_entry is None:
                raise ProtoJsonError("entries: null element")
            entry = _fields(raw_entry, _ENTRY, "Entry")
            add_entry(
                key=_string(entry.get("key", ""), "key"),
                value=_string(entry.get("value", ""), "value"),
            )
        if "limit" in item:
            override = _fields(item["limit"], _OVERRIDE, "RateLimitOverride")
            limit = descriptor.limit
            limit.SetInParent()
            limit.requests_per_unit = _integer(
                override.get("requests_per_unit", 0), _UINT32, "requestsPerUnit"
            )
            unit = override.get("unit", 0)
            if isinstance(unit, str):
                if unit not in _OVERRIDE_UNITS:
                    raise ProtoJsonError(f"unit: unknown value {unit!r}")
                unit = _OVERRIDE_UNITS[unit]
            elif (
                isinstance(unit, bool) or not isinstance(unit, int) or not -(2**31) <= unit < 2**31
            ):
                raise ProtoJsonError("unit: expected an enum name or number")
            limit.unit = unit  # type: ignore[assignment]
        if "hits_addend" in item:
            descriptor.hits_addend.value = _integer(item["hits_addend"], _UINT64, "hitsAddend")
    return request


def response_json(response: rls_pb2.RateLimitResponse) -> bytes:
    """Compact proto3 JSON of a decision: lowerCamel names, enum names, zero values omitted,
    fields in the order of their declaration (as Go's ``protojson`` writes them)."""
    parts: list[str] = []
    code = response.overall_code
    if code:
        parts.append('"overallCode":' + (_CODE_JSON.get(code) or str(code)))
    statuses = response.statuses
    if statuses:
        parts.append('"statuses":[' + ",".join(map(_status, statuses)) + "]")
    if response.response_headers_to_add:
        parts.append(
            '"responseHeadersToAdd":'
            + _dumps([_header(header) for header in response.response_headers_to_add])
        )
    if response.request_headers_to_add:
        parts.append(
            '"requestHeadersToAdd":'
            + _dumps([_header(header) for header in response.request_headers_to_add])
        )
    if response.raw_body or response.HasField("dynamic_metadata") or response.HasField("quota"):
        rest = json_format.MessageToDict(
            rls_pb2.RateLimitResponse(
                raw_body=response.raw_body,
                dynamic_metadata=response.dynamic_metadata
                if response.HasField("dynamic_metadata")
                else None,
                quota=response.quota if response.HasField("quota") else None,
            )
        )
        parts.extend(_dumps(key) + ":" + _dumps(value) for key, value in rest.items())
    return ("{" + ",".join(parts) + "}").encode()


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class JsonLimit(Protocol):
    """What :func:`decision_json` reads of a status's limit (a
    :class:`~handlers.ratelimit.matching.MatchedLimit`, which keeps its ``current_limit``
    written by :func:`current_limit_json`)."""

    @property
    def divider(self) -> int:
        """The limit's window in seconds."""
        ...

    @property
    def current_json(self) -> str:
        """The status's ``"currentLimit":{...}`` member."""
        ...

    def seconds_until_reset(self, now: int) -> int:
        """Whole seconds from ``now`` to the end of the limit's window."""
        ...


def decision_json(
    overall_code: int,
    codes: Sequence[int],
    remaining: Sequence[int],
    limits: Sequence[JsonLimit | None],
    now: int,
    resets: Mapping[int, int] | None = None,
) -> bytes:
    """:func:`response_json` of :func:`~handlers.ratelimit.limiter.response_message` of the
    same values, written from them without making the message (each status in one f-string:
    this runs for every ``/json`` answer). ``resets``: the seconds until reset of issue 23's
    statuses, by index."""
    statuses: list[str] = []
    for index, (code, left, limit) in enumerate(zip(codes, remaining, limits, strict=True)):
        if code and left and limit is not None and (resets is None or index not in resets):
            # the usual status, with every member
            divider = limit.divider  # seconds_until_reset, without a call per status
            statuses.append(
                f"{{{_CODE_MEMBER.get(code) or _code_member(code)},{limit.current_json},"
                f'"limitRemaining":{left},"durationUntilReset":"{divider - now % divider}s"}}'
            )
            continue
        if limit is None:
            members = f'"limitRemaining":{left}' if left else ""
        else:
            if resets is not None and index in resets:
                reset = resets[index]
            else:
                reset = limit.seconds_until_reset(now)
            if left:
                members = (
                    f'{limit.current_json},"limitRemaining":{left},"durationUntilReset":"{reset}s"'
                )
            else:
                members = f'{limit.current_json},"durationUntilReset":"{reset}s"'
        if code:
            code_member = _CODE_MEMBER.get(code) or _code_member(code)
            members = f"{code_member},{members}" if members else code_member
        statuses.append(f"{{{members}}}")
    if overall_code:
        overall = _CODE_JSON.get(overall_code) or str(overall_code)
        if statuses:
            return f'{{"overallCode":{overall},"statuses":[{",".join(statuses)}]}}'.encode()
        return f'{{"overallCode":{overall}}}'.encode()
    if statuses:
        return f'{{"statuses":[{",".join(statuses)}]}}'.encode()
    return b"{}"


def _code_member(code: int) -> str:
    """The ``"code"`` member of a code outside the enum (proto3 enums are open)."""
    return f'"code":{code}'


def current_limit_json(limit: rls_pb2.RateLimitResponse.RateLimit) -> str:
    """The ``"currentLimit":{...}`` member of a status."""
    current: list[str] = []
    name = limit.name
    if name:
        current.append('"name":' + _json_string(name))
    requests_per_unit = limit.requests_per_unit
    if requests_per_unit:
        current.append(f'"requestsPerUnit":{requests_per_unit}')
    unit = limit.unit
    if unit:
        current.append('"unit":' + (_UNIT_JSON.get(unit) or str(unit)))
    return '"currentLimit":{' + ",".join(current) + "}"


def _status(status: rls_pb2.RateLimitResponse.DescriptorStatus) -> str:
    # written out field by field: this runs for every status of a /json answer with response
    # headers or dynamic metadata (decision_json writes the others)
    parts: list[str] = []
    code = status.code
    if code:
        parts.append('"code":' + (_CODE_JSON.get(code) or str(code)))
    if status.HasField("current_limit"):
        parts.append(current_limit_json(status.current_limit))
    remaining = status.limit_remaining
    if remaining:
        parts.append(f'"limitRemaining":{remaining}')
    if status.HasField("duration_until_reset"):
        reset = status.duration_until_reset
        if reset.nanos:
            parts.append('"durationUntilReset":' + _dumps(json_format.MessageToDict(reset)))
        else:
            parts.append(f'"durationUntilReset":"{reset.seconds}s"')
    if status.HasField("quota"):
        parts.append('"quota":' + _dumps(json_format.MessageToDict(status.quota)))
    return "{" + ",".join(parts) + "}"


def _header(header: base_pb2.HeaderValue) -> dict[str, Any]:
    item: dict[str, Any] = {}
    if header.key:
        item["key"] = header.key
    if header.value:
        item["value"] = header.value
    if header.raw_value:
        item.update(json_format.MessageToDict(base_pb2.HeaderValue(raw_value=header.raw_value)))
    return item
