"""The loader and ``specs/ratelimit-config.schema.json`` agree on what a valid rule file is.

The schema is the structural check; the loader adds the semantic checks the schema describes
as its own (duplicate composite keys, ``replaces`` naming the rule's own name, metadata
conversion), so a file may pass the schema and still fail to load for those reasons only.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # types-jsonschema is not installed
import pytest
import yaml

from handlers.ratelimit.config.parse import ConfigError, load_rule_set
from tests.specs.test_ratelimit_config_schema import INVALID as SPEC_INVALID
from tests.specs.test_ratelimit_config_schema import VALID as SPEC_VALID

SCHEMA_PATH = Path(__file__).resolve().parents[3] / "specs" / "ratelimit-config.schema.json"

HEAD = "domain: test-domain\ndescriptors:\n"

VALID = {
    "minimal": "domain: test-domain\ndescriptors: []\n",
    "basic": HEAD + "  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n",
    "whitelist": HEAD + "  - key: k\n    value: v\n",
    "nested": HEAD
    + "  - key: a\n    value: b\n    descriptors:\n"
    + "      - key: c\n        rate_limit: {unit: Second, requests_per_unit: 0}\n",
    "every unit": HEAD
    + "".join(
        f"  - key: {unit}\n    rate_limit: {{unit: {unit}, requests_per_unit: 1}}\n"
        for unit in ("second", "MINUTE", "Hour", "day", "week", "month", "year")
    ),
    "unlimited": HEAD + "  - key: k\n    rate_limit: {unlimited: true}\n",
    "unlimited unknown": HEAD + "  - key: k\n    rate_limit: {unlimited: true, unit: UNKNOWN}\n",
    "unlimited with count": HEAD
    + "  - key: k\n    rate_limit: {unlimited: true, requests_per_unit: 4}\n",
    "flags": HEAD
    + "  - key: k\n    value: v*\n    shadow_mode: true\n    quota_mode: false\n"
    + "    detailed_metric: true\n    value_to_metric: true\n    share_threshold: true\n",
    "middle wildcard": HEAD + "  - key: k\n    value: a*b\n    share_threshold: true\n",
    "replaces": HEAD
    + "  - key: k\n    rate_limit:\n      unit: hour\n      requests_per_unit: 1\n"
    + "      name: mine\n      replaces: [{name: other}, {name: third}]\n",
    "metadata": HEAD + "  - key: k\n    metadata: {any: {thing: [1.5, x]}}\n",
    "integer domain and key": "domain: 200\ndescriptors:\n  - key: 404\n    value: 7\n",
    "nulls": HEAD
    + "  - key: k\n    value: ~\n    rate_limit: ~\n    shadow_mode: ~\n    metadata: ~\n"
    + "    descriptors: ~\n",
    "max count": HEAD + "  - key: k\n    rate_limit: {unit: day, requests_per_unit: 4294967295}\n",
}

INVALID = {
    "not a map": "- domain: test-domain\n",
    "no domain": "descriptors: []\n",
    "empty domain": 'domain: ""\ndescriptors: []\n',
    "no descriptors": "domain: test-domain\n",
    "null descriptors": "domain: test-domain\ndescriptors: ~\n",
    "unknown top key": "domain: test-domain\ndescriptors: []\nratelimit: {}\n",
    "unknown descriptor key": HEAD + "  - key: k\n    ratelimit: {unit: day}\n",
    "wrong-level key": HEAD + "  - key: k\n    unit: day\n",
    "unknown rate limit key": HEAD
    + "  - key: k\n    rate_limit: {unit: day, requestsperunit: 5}\n",
    "unknown replace key": HEAD
    + "  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1, replaces: [{nam: x}]}\n",
    "list of strings": HEAD + "  - a\n  - b\n",
    "float key": HEAD + "  - key: 1.5\n",
    "float count": HEAD + "  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1.5}\n",
    "negative count": HEAD + "  - key: k\n    rate_limit: {unit: day, requests_per_unit: -1}\n",
    "too large count": HEAD
    + "  - key: k\n    rate_limit: {unit: day, requests_per_unit: 4294967296}\n",
    "string count": HEAD + "  - key: k\n    rate_limit: {unit: day, requests_per_unit: '5'}\n",
    "no key": HEAD + "  - value: v\n",
    "empty key": HEAD + "  - key: ''\n",
    "bad unit": HEAD + "  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n",
    "unknown unit": HEAD + "  - key: k\n    rate_limit: {unit: unknown, requests_per_unit: 1}\n",
    "no unit": HEAD + "  - key: k\n    rate_limit: {requests_per_unit: 1}\n",
    "no count": HEAD + "  - key: k\n    rate_limit: {unit: minute}\n",
    "empty rate limit": HEAD + "  - key: k\n    rate_limit: {}\n",
    "unlimited with unit": HEAD + "  - key: k\n    rate_limit: {unlimited: true, unit: minute}\n",
    "unlimited with bad unit": HEAD + "  - key: k\n    rate_limit: {unlimited: true, unit: foo}\n",
    "empty replaces name": HEAD
    + "  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1, replaces: [{name: ''}]}\n",
    "share threshold without wildcard": HEAD
    + "  - key: k\n    value: v\n    share_threshold: true\n",
    "string flag": HEAD + "  - key: k\n    shadow_mode: 'true'\n",
    "scalar metadata": HEAD + "  - key: k\n    metadata: service\n",
    "scalar descriptors": HEAD + "  - key: k\n    descriptors: nested\n",
    "scalar rate limit": HEAD + "  - key: k\n    rate_limit: 5\n",
}

# Valid for the schema, refused by the loader's semantic checks (the schema says so).
SEMANTIC_ONLY = {
    "duplicate composite key": (
        HEAD + "  - key: k\n    value: v\n  - key: k\n    value: v\n",
        "duplicate descriptor composite key 'test-domain.k_v'",
    ),
    "replaces own name": (
        HEAD + "  - key: k\n    rate_limit:\n      unit: day\n      requests_per_unit: 1\n"
        "      name: me\n      replaces: [{name: me}]\n",
        "replaces should not contain name of same descriptor",
    ),
    "metadata not a struct": (
        HEAD + "  - key: k\n    metadata: {nested: {1: one}}\n",
        "error parsing metadata: key is not of type string: 1",
    ),
}


# The schema's own examples (tests/specs) count too.
VALID.update({f"spec: {name}": text for name, text in SPEC_VALID.items()})
INVALID.update({f"spec: {name}": text for name, (text, _) in SPEC_INVALID.items()})


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def schema_accepts(validator: jsonschema.protocols.Validator, text: str) -> bool:
    document: Any = yaml.safe_load(text)
    return bool(validator.is_valid(_json_keys(document)))


def _json_keys(value: Any) -> Any:
    """JSON has only string keys: a non-string key is kept distinguishable as its repr."""
    if isinstance(value, dict):
        return {k if isinstance(k, str) else repr(k): _json_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_keys(v) for v in value]
    return value


def loader_error(text: str) -> str | None:
    try:
        load_rule_set([("rules.yaml", textwrap.dedent(text))], merge_domains=False)
    except ConfigError as error:
        return error.message
    return None


@pytest.mark.parametrize("text", VALID.values(), ids=VALID.keys())
def test_valid_for_both(validator: jsonschema.protocols.Validator, text: str) -> None:
    assert schema_accepts(validator, text)
    assert loader_error(text) is None


@pytest.mark.parametrize("text", INVALID.values(), ids=INVALID.keys())
def test_invalid_for_both(validator: jsonschema.protocols.Validator, text: str) -> None:
    assert not schema_accepts(validator, text)
    assert loader_error(text) is not None


@pytest.mark.parametrize(
    ("text", "message"), SEMANTIC_ONLY.values(), ids=list(SEMANTIC_ONLY.keys())
)
def test_semantic_checks_beyond_the_schema(
    validator: jsonschema.protocols.Validator, text: str, message: str
) -> None:
    assert schema_accepts(validator, text)
    assert loader_error(text) == message
