"""What the load generator sends and what the servers answer: the rate limit requests (1 or
2 descriptors), their gRPC frames and ``/json`` bodies, the rule file that makes every
descriptor hit a limit, and the fixed responses of the echo servers."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from google.protobuf import duration_pb2, json_format

from generated.proto.envoy.extensions.common.ratelimit.v3 import ratelimit_pb2
from generated.proto.envoy.service.ratelimit.v3 import rls_pb2

DOMAIN = "bench"
GRPC_PATH = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
JSON_PATH = "/json"
GRPC_HEADERS: tuple[str, ...] = ("content-type: application/grpc", "te: trailers")
JSON_HEADERS: tuple[str, ...] = ("content-type: application/json",)

# One rule per descriptor key, far above anything a run can send in one window (an hour), so
# every request is counted (one increment per descriptor) and none goes over the limit. An
# hour's counters also outlive any run (they expire an hour after their last increment), so
# the Redis counters can be summed after each measurement.
REQUESTS_PER_UNIT = 1_000_000_000
UNIT = "hour"
# descriptor i of a request is [(KEYS[i], VALUES[i])]
KEYS: tuple[str, ...] = ("remote_address", "path")
VALUES: tuple[str, ...] = ("10.0.0.1", "/api/v1/items")
MAX_DESCRIPTORS = len(KEYS)

# The algorithms of the algorithm rows (issue 23), each in its own domain with the same keys
# and the same 10^9 limit, so that no request of a run is refused: ``fixed`` is the rule above
# (domain ``bench``, the baseline of the others); ``sliding`` the sliding window and ``bucket``
# the token bucket, both of 10^9 per hour (the bucket's burst defaults to 10^9 too); ``two``
# two limits per descriptor (``rate_limits:``), a token bucket of 10^9 per second and a fixed
# window of 10^9 per day.
FIXED = "fixed"
SLIDING = "sliding"
BUCKET = "bucket"
TWO = "two"
ALGORITHMS: tuple[str, ...] = (FIXED, SLIDING, BUCKET, TWO)
ALGORITHM_LABEL = {
    FIXED: "fixed window",
    SLIDING: "sliding window",
    BUCKET: "token bucket",
    TWO: "bucket/s + fixed/day",
}
_LIMITS: dict[str, tuple[tuple[str, str | None], ...]] = {  # (unit, algorithm) per limit
    SLIDING: ((UNIT, "sliding_window"),),
    BUCKET: ((UNIT, "token_bucket"),),
    TWO: (("second", "token_bucket"), ("day", None)),
}


def domain(algorithm: str = FIXED) -> str:
    """The domain of ``algorithm``'s rules: ``bench`` for the fixed window, else
    ``bench-<algorithm>``."""
    return DOMAIN if algorithm == FIXED else f"{DOMAIN}-{algorithm}"


def rule_yaml(algorithm: str = FIXED) -> str:
    """The rule file of ``algorithm``: one limit (or two, for ``two``) per descriptor key, no
    value match needed; for ``fixed``, domain ``bench``, one fixed window of 10^9 per hour."""
    lines = [f"domain: {domain(algorithm)}", "descriptors:"]
    for key in KEYS:
        lines.append(f"  - key: {key}")
        if algorithm == FIXED:
            lines += [
                "    rate_limit:",
                f"      unit: {UNIT}",
                f"      requests_per_unit: {REQUESTS_PER_UNIT}",
            ]
            continue
        limits = _LIMITS[algorithm]
        if len(limits) > 1:
            lines.append("    rate_limits:")
            first, rest = "      - ", "        "
        else:
            lines.append("    rate_limit:")
            first = rest = "      "
        for unit, name in limits:
            lines += [f"{first}unit: {unit}", f"{rest}requests_per_unit: {REQUESTS_PER_UNIT}"]
            if name is not None:
                lines.append(f"{rest}algorithm: {name}")
    return "\n".join(lines) + "\n"


def write_rules(
    runtime_root: Path,
    subdirectory: str,
    appdirectory: str,
    algorithms: tuple[str, ...] = (FIXED,),
) -> Path:
    """Write the rule files where the service reads them (ROOT/SUBDIRECTORY/APPDIRECTORY):
    ``bench.yaml`` (the fixed window), and ``bench-<algorithm>.yaml`` for each other of
    ``algorithms``. Returns the path of ``bench.yaml``."""
    directory = runtime_root / subdirectory / appdirectory
    directory.mkdir(parents=True, exist_ok=True)
    for algorithm in algorithms:
        if algorithm != FIXED:
            (directory / f"{domain(algorithm)}.yaml").write_text(rule_yaml(algorithm))
    path = directory / "bench.yaml"
    path.write_text(rule_yaml())
    return path


def request(descriptors: int, algorithm: str = FIXED) -> rls_pb2.RateLimitRequest:
    if not 1 <= descriptors <= MAX_DESCRIPTORS:
        raise ValueError(f"descriptors must be 1..{MAX_DESCRIPTORS}, not {descriptors}")
    return rls_pb2.RateLimitRequest(
        domain=domain(algorithm),
        descriptors=[
            ratelimit_pb2.RateLimitDescriptor(
                entries=[ratelimit_pb2.RateLimitDescriptor.Entry(key=KEYS[i], value=VALUES[i])]
            )
            for i in range(descriptors)
        ],
        hits_addend=1,
    )


def grpc_frame(message: bytes) -> bytes:
    """A gRPC length-prefixed message: flag 0 (not compressed), 4-byte big-endian length."""
    return struct.pack(">BI", 0, len(message)) + message


def grpc_body(descriptors: int, algorithm: str = FIXED) -> bytes:
    """The HTTP/2 request body of one ShouldRateLimit call."""
    return grpc_frame(request(descriptors, algorithm).SerializeToString())


def json_body(descriptors: int, algorithm: str = FIXED) -> bytes:
    """The ``/json`` request body (proto3 JSON, as Envoy's HTTP clients would post it)."""
    doc = json_format.MessageToDict(request(descriptors, algorithm))
    return json.dumps(doc, separators=(",", ":")).encode()


def echo_response(descriptors: int) -> rls_pb2.RateLimitResponse:
    """What the echo servers answer: OK, one OK status per descriptor, shaped like the
    service's own answer (current limit, remaining, time until reset)."""
    status = rls_pb2.RateLimitResponse.DescriptorStatus(
        code=rls_pb2.RateLimitResponse.OK,
        current_limit=rls_pb2.RateLimitResponse.RateLimit(
            requests_per_unit=REQUESTS_PER_UNIT, unit=rls_pb2.RateLimitResponse.RateLimit.HOUR
        ),
        limit_remaining=REQUESTS_PER_UNIT - 1,
        duration_until_reset=duration_pb2.Duration(seconds=1800),
    )
    return rls_pb2.RateLimitResponse(
        overall_code=rls_pb2.RateLimitResponse.OK, statuses=[status] * descriptors
    )


def echo_json(descriptors: int) -> bytes:
    """:func:`echo_response` in compact proto3 JSON (the Starlette echo's answer)."""
    doc = json_format.MessageToDict(echo_response(descriptors))
    return json.dumps(doc, separators=(",", ":")).encode()


def check_decision(response: rls_pb2.RateLimitResponse, descriptors: int) -> str | None:
    """Why ``response`` is not the decision a counted, under-limit request gets, or None."""
    if response.overall_code != rls_pb2.RateLimitResponse.OK:
        return f"overall_code {rls_pb2.RateLimitResponse.Code.Name(response.overall_code)}"
    if len(response.statuses) != descriptors:
        return f"{len(response.statuses)} statuses for {descriptors} descriptors"
    for i, status in enumerate(response.statuses):
        if status.current_limit.requests_per_unit != REQUESTS_PER_UNIT:
            return f"status {i} has no current_limit: the rule did not match"
        if not 0 < status.limit_remaining < REQUESTS_PER_UNIT:
            return f"status {i} has limit_remaining {status.limit_remaining}: not counted"
    return None


def check_json_decision(body: bytes, descriptors: int) -> str | None:
    """:func:`check_decision` for a ``/json`` answer."""
    try:
        response = json_format.Parse(body, rls_pb2.RateLimitResponse())
    except (json_format.ParseError, ValueError) as error:
        return f"not a RateLimitResponse in JSON ({error}): {body[:300]!r}"
    return check_decision(response, descriptors)
