"""xDS ``RateLimitConfig`` resources to a :class:`RuleSet`.

Each resource is unpacked from its ``Any`` and turned into the document a rule file would
parse to (upstream's ``ConfigXdsProtoToYaml``: the unit is the enum's name, ``UNKNOWN`` when
unset as for unlimited rules), then loaded by :func:`load_documents`, so the validation, the
messages (``<RateLimitConfig.name>: <message>``) and ``MERGE_DOMAIN_CONFIG`` are the rule
files'. The proto has no ``value_to_metric`` or ``share_threshold``: over xDS they stay off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf import any_pb2, json_format
from google.protobuf.message import DecodeError

from generated.proto.ratelimit.config.ratelimit.v3 import rls_conf_pb2
from handlers.ratelimit.config.model import RuleSet
from handlers.ratelimit.config.parse import ConfigError, load_documents

__all__ = [
    "RATE_LIMIT_CONFIG_TYPE_URL",
    "config_document",
    "load_resources",
    "pack_config",
]

_FULL_NAME = rls_conf_pb2.RateLimitConfig.DESCRIPTOR.full_name
RATE_LIMIT_CONFIG_TYPE_URL = "type.googleapis.com/" + _FULL_NAME


def config_document(config: rls_conf_pb2.RateLimitConfig) -> dict[str, Any]:
    """The rule-file document of one ``RateLimitConfig``."""
    return {
        "domain": config.domain,
        "descriptors": [_descriptor(item) for item in config.descriptors],
    }


def _descriptor(descriptor: rls_conf_pb2.RateLimitDescriptor) -> dict[str, Any]:
    document: dict[str, Any] = {
        "key": descriptor.key,
        "value": descriptor.value,
        "shadow_mode": descriptor.shadow_mode,
        "quota_mode": descriptor.quota_mode,
        "detailed_metric": descriptor.detailed_metric,
        "descriptors": [_descriptor(item) for item in descriptor.descriptors],
    }
    if descriptor.HasField("rate_limit"):
        policy = descriptor.rate_limit
        document["rate_limit"] = {
            "unit": _unit_name(policy.unit),
            "requests_per_unit": policy.requests_per_unit,
            "unlimited": policy.unlimited,
            "name": policy.name,
            "replaces": [{"name": replace.name} for replace in policy.replaces],
        }
    if descriptor.HasField("metadata"):
        document["metadata"] = json_format.MessageToDict(descriptor.metadata)
    return document


def _unit_name(unit: rls_conf_pb2.RateLimitUnit.ValueType) -> str:
    """The enum value's name; a number the proto does not know prints as the number (Go)."""
    try:
        return rls_conf_pb2.RateLimitUnit.Name(unit)
    except ValueError:
        return str(unit)


def _unpack(index: int, resource: any_pb2.Any) -> rls_conf_pb2.RateLimitConfig:
    where = f"resources[{index}]"
    got = resource.type_url.rpartition("/")[2]
    if got != _FULL_NAME:
        raise ConfigError(where, f'mismatched message type: got "{got}", want "{_FULL_NAME}"')
    try:
        return rls_conf_pb2.RateLimitConfig.FromString(resource.value)
    except DecodeError as error:
        raise ConfigError(where, f"cannot parse invalid wire-format data: {error}") from None


def load_resources(resources: Sequence[any_pb2.Any], *, merge_domains: bool) -> RuleSet:
    """Load one response's full set of resources; raises :class:`ConfigError`."""
    configs = [_unpack(index, resource) for index, resource in enumerate(resources)]
    return load_documents(
        [(config.name, config_document(config)) for config in configs],
        merge_domains=merge_domains,
    )


def pack_config(config: rls_conf_pb2.RateLimitConfig) -> any_pb2.Any:
    """``config`` in an ``Any`` with the resource's type URL."""
    return any_pb2.Any(type_url=RATE_LIMIT_CONFIG_TYPE_URL, value=config.SerializeToString())
