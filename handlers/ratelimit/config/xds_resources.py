"""xDS ``RateLimitConfig`` resources to a :class:`RuleSet`.

Each resource is unpacked from its ``Any`` and turned into the document a rule file would
parse to (upstream's ``ConfigXdsProtoToYaml``: the unit is the enum's name, ``UNKNOWN`` when
unset as for unlimited rules), then loaded by :func:`load_documents`, so the validation, the
messages (``<RateLimitConfig.name>: <message>``) and ``MERGE_DOMAIN_CONFIG`` are the rule
files'. The proto has no ``value_to_metric`` or ``share_threshold``: over xDS they stay off.

The bytes are decoded with our superset of upstream's messages
(``specs/proto/contractplatform/ratelimit/config/v1/rls_conf_superset.proto``: upstream's
fields, plus issue 23's at field numbers 1001+), under upstream's type URL. A resource without
the extension fields gives exactly upstream's document; one with them gives the rule-file keys
``algorithm``, ``burst``, ``unit_multiplier``, ``window`` and ``rate_limits``, which
:func:`load_documents` checks as it checks a file's (a policy using them may leave ``unit``
unset: then the document has no ``unit``, as a rule file that gives ``window`` instead).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf import any_pb2, duration_pb2, json_format
from google.protobuf.message import DecodeError

from generated.proto.contractplatform.ratelimit.config.v1 import rls_conf_superset_pb2 as ours
from generated.proto.ratelimit.config.ratelimit.v3 import rls_conf_pb2
from handlers.ratelimit.config.model import RuleSet
from handlers.ratelimit.config.parse import ConfigError, load_documents

__all__ = [
    "RATE_LIMIT_CONFIG_TYPE_URL",
    "AnyRateLimitConfig",
    "config_document",
    "load_resources",
    "pack_config",
]

_FULL_NAME = rls_conf_pb2.RateLimitConfig.DESCRIPTOR.full_name
RATE_LIMIT_CONFIG_TYPE_URL = "type.googleapis.com/" + _FULL_NAME

AnyRateLimitConfig = rls_conf_pb2.RateLimitConfig | ours.RateLimitConfig
"""Upstream's message or our superset: the same bytes, the same type URL."""

_NANOS_PER_MS = 1_000_000
_NANOS_PER_SECOND = 1_000_000_000


def config_document(config: AnyRateLimitConfig) -> dict[str, Any]:
    """The rule-file document of one ``RateLimitConfig``."""
    if isinstance(config, rls_conf_pb2.RateLimitConfig):
        # upstream's message has no extension fields: its bytes read as the superset's
        config = ours.RateLimitConfig.FromString(config.SerializeToString())
    return {
        "domain": config.domain,
        "descriptors": [_descriptor(item) for item in config.descriptors],
    }


def _descriptor(descriptor: ours.RateLimitDescriptor) -> dict[str, Any]:
    document: dict[str, Any] = {
        "key": descriptor.key,
        "value": descriptor.value,
        "shadow_mode": descriptor.shadow_mode,
        "quota_mode": descriptor.quota_mode,
        "detailed_metric": descriptor.detailed_metric,
        "descriptors": [_descriptor(item) for item in descriptor.descriptors],
    }
    if descriptor.more_rate_limits:
        # several limits: rate_limit (what upstream sees) first, then the extension's
        first = [descriptor.rate_limit] if descriptor.HasField("rate_limit") else []
        document["rate_limits"] = [
            _policy(policy, extended=True) for policy in (*first, *descriptor.more_rate_limits)
        ]
    elif descriptor.HasField("rate_limit"):
        policy = descriptor.rate_limit
        document["rate_limit"] = _policy(policy, extended=_uses_extension(policy))
    if descriptor.HasField("metadata"):
        document["metadata"] = json_format.MessageToDict(descriptor.metadata)
    return document


def _uses_extension(policy: ours.RateLimitPolicy) -> bool:
    return (
        policy.algorithm != ours.ALGORITHM_UNSPECIFIED
        or policy.HasField("burst")
        or policy.HasField("unit_multiplier")
        or policy.HasField("window")
    )


def _policy(policy: ours.RateLimitPolicy, *, extended: bool) -> dict[str, Any]:
    """A ``rate_limit`` block. Upstream's keys as upstream writes them; in an ``extended`` one
    (issue 23's fields, or an entry of ``rate_limits``) an unset unit is left out, since the
    window may come from ``window``, and each extension field that is set is added."""
    document: dict[str, Any] = {}
    if policy.unit != rls_conf_pb2.UNKNOWN or not extended:
        document["unit"] = _unit_name(policy.unit)
    document.update(
        requests_per_unit=policy.requests_per_unit,
        unlimited=policy.unlimited,
        name=policy.name,
        replaces=[{"name": replace.name} for replace in policy.replaces],
    )
    if policy.algorithm != ours.ALGORITHM_UNSPECIFIED:
        document["algorithm"] = _algorithm_name(policy.algorithm)
    if policy.HasField("burst"):
        document["burst"] = policy.burst
    if policy.HasField("unit_multiplier"):
        document["unit_multiplier"] = policy.unit_multiplier
    if policy.HasField("window"):
        document["window"] = _window_spelling(policy.window)
    return document


def _unit_name(unit: rls_conf_pb2.RateLimitUnit.ValueType) -> str:
    """The enum value's name; a number the proto does not know prints as the number (Go)."""
    try:
        return rls_conf_pb2.RateLimitUnit.Name(unit)
    except ValueError:
        return str(unit)


def _algorithm_name(algorithm: ours.RateLimitAlgorithm.ValueType) -> str | int:
    """The rule file's name (the enum's, lower-cased); a number the proto does not know stays a
    number, which the loader refuses as it refuses ``algorithm: 7`` in a file."""
    try:
        return ours.RateLimitAlgorithm.Name(algorithm).lower()
    except ValueError:
        return int(algorithm)


def _window_spelling(window: duration_pb2.Duration) -> str:
    """The ``window:`` text of a Duration: ``30s``, ``500ms``, ``1s500ms``. A Duration that is
    not a whole number of milliseconds at least 0 is written in seconds with its fraction
    (``-1s``, ``0.0005s``), which the loader refuses with the accepted spellings."""
    nanos = window.seconds * _NANOS_PER_SECOND + window.nanos
    if nanos >= 0 and nanos % _NANOS_PER_MS == 0:
        seconds, ms = divmod(nanos // _NANOS_PER_MS, 1000)
        spelled = (f"{seconds}s" if seconds else "") + (f"{ms}ms" if ms else "")
        return spelled or "0s"
    sign = "-" if nanos < 0 else ""
    seconds, fraction = divmod(abs(nanos), _NANOS_PER_SECOND)
    return f"{sign}{seconds}.{fraction:09d}".rstrip("0").rstrip(".") + "s"


def _unpack(index: int, resource: any_pb2.Any) -> ours.RateLimitConfig:
    where = f"resources[{index}]"
    got = resource.type_url.rpartition("/")[2]
    if got != _FULL_NAME:
        raise ConfigError(where, f'mismatched message type: got "{got}", want "{_FULL_NAME}"')
    try:
        return ours.RateLimitConfig.FromString(resource.value)
    except DecodeError as error:
        raise ConfigError(where, f"cannot parse invalid wire-format data: {error}") from None


def load_resources(resources: Sequence[any_pb2.Any], *, merge_domains: bool) -> RuleSet:
    """Load one response's full set of resources; raises :class:`ConfigError`."""
    configs = [_unpack(index, resource) for index, resource in enumerate(resources)]
    return load_documents(
        [(config.name, config_document(config)) for config in configs],
        merge_domains=merge_domains,
    )


def pack_config(config: AnyRateLimitConfig) -> any_pb2.Any:
    """``config`` (upstream's message or our superset) in an ``Any`` with upstream's type URL."""
    return any_pb2.Any(type_url=RATE_LIMIT_CONFIG_TYPE_URL, value=config.SerializeToString())
