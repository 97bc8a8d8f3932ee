"""``specs/ratelimit-config.schema.json`` accepts the upstream's rule files and rejects bad ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "specs" / "ratelimit-config.schema.json"


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def errors(validator: Draft202012Validator, text: str) -> list[str]:
    document: Any = yaml.safe_load(text)
    return [
        f"{'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
        for error in validator.iter_errors(document)
    ]


VALID = {
    "seed-levels-and-defaults": """
domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500
  - key: database
    value: default
    rate_limit:
      unit: second
      requests_per_unit: 500
""",
    "nested-with-placeholder-and-whitelist": """
domain: messaging
descriptors:
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 20
  - key: key2
    value: value3
""",
    "deeply-nested-remote-address-and-path": """
domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10
  - key: remote_address
    value: 50.0.0.5
    descriptors:
      - key: path
        value: /foo
        rate_limit:
          unit: second
          requests_per_unit: 1
""",
    "wildcards-and-share-threshold": """
domain: test-domain
descriptors:
  - key: file
    value: test1
    rate_limit: {unit: minute, requests_per_unit: 50}
  - key: file
    value: test*
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: files
    value: files/*
    share_threshold: true
    value_to_metric: true
    rate_limit: {unit: hour, requests_per_unit: 10}
  - key: midWild
    value: bar*b
    detailed_metric: true
    rate_limit: {unit: Day, requests_per_unit: 3}
""",
    "unlimited-and-blocking-zero": """
domain: internal
descriptors:
  - key: service
    value: health
    rate_limit:
      unlimited: true
  - key: service
    value: banned
    rate_limit:
      unit: SECOND
      requests_per_unit: 0
  - key: service
    value: xds-converted
    rate_limit:
      unit: UNKNOWN
      unlimited: true
""",
    "replaces-example-7": """
domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        rate_limit:
          name: specific_limit
          unit: second
          requests_per_unit: 5
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        rate_limit:
          replaces:
            - name: specific_limit
          unit: second
          requests_per_unit: 10
""",
    "shadow-quota-metadata-and-long-units": """
domain: shadow
descriptors:
  - key: tenant
    shadow_mode: true
    quota_mode: true
    metadata:
      name: service_1
      nested: {weights: [1, 2.5], enabled: true}
    rate_limit:
      unit: week
      requests_per_unit: 4294967295
  - key: tenant_month
    rate_limit: {unit: month, requests_per_unit: 1000}
  - key: tenant_year
    rate_limit: {unit: year, requests_per_unit: 10000}
""",
    "yaml-scalars-and-nulls-as-upstream": """
domain: statuses
descriptors:
  - key: status
    value: 429
    shadow_mode:
    descriptors:
  - key: flag
    value: true
    rate_limit: {unit: minute, requests_per_unit: 1, name: 7}
""",
    "empty-descriptor-list": """
domain: overrides_only
descriptors: []
""",
}


INVALID = {
    "missing-domain": (
        """
descriptors:
  - key: a
""",
        "'domain' is a required property",
    ),
    "empty-domain": ('domain: ""\ndescriptors: []\n', "should be non-empty"),
    "missing-descriptors": ("domain: d\n", "'descriptors' is a required property"),
    "missing-key": (
        """
domain: d
descriptors:
  - value: v
    rate_limit: {unit: second, requests_per_unit: 1}
""",
        "'key' is a required property",
    ),
    "empty-key": ('domain: d\ndescriptors:\n  - key: ""\n', "should be non-empty"),
    "bad-unit": (
        """
domain: d
descriptors:
  - key: a
    rate_limit: {unit: fortnight, requests_per_unit: 1}
""",
        "'fortnight' does not match",
    ),
    "unit-unknown-without-unlimited": (
        """
domain: d
descriptors:
  - key: a
    rate_limit: {unit: unknown, requests_per_unit: 1}
""",
        "'unknown' does not match",
    ),
    "missing-unit": (
        """
domain: d
descriptors:
  - key: a
    rate_limit: {requests_per_unit: 1}
""",
        "'unit' is a required property",
    ),
    "missing-requests-per-unit": (
        """
domain: d
descriptors:
  - key: a
    rate_limit: {unit: minute}
""",
        "'requests_per_unit' is a required property",
    ),
    "negative-requests-per-unit": (
        """
domain: d
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: -1}
""",
        "-1 is less than the minimum of 0",
    ),
    "requests-per-unit-over-uint32": (
        """
domain: d
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 4294967296}
""",
        "is greater than the maximum of 4294967295",
    ),
    "requests-per-unit-as-string": (
        """
domain: d
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: "10"}
""",
        "'10' is not of type 'integer', 'null'",
    ),
    "unlimited-with-unit": (
        """
domain: d
descriptors:
  - key: a
    rate_limit: {unlimited: true, unit: second}
""",
        "'second' does not match",
    ),
    "unknown-field-in-descriptor": (
        """
domain: d
descriptors:
  - key: a
    ratelimit: {unit: second, requests_per_unit: 1}
""",
        "Additional properties are not allowed ('ratelimit' was unexpected)",
    ),
    "unknown-field-in-rate-limit": (
        """
domain: d
descriptors:
  - key: a
    rate_limit: {unit: second, requestsperunit: 1}
""",
        "('requestsperunit' was unexpected)",
    ),
    "unknown-top-level-field": (
        "domain: d\ndescriptors: []\nversion: 2\n",
        "('version' was unexpected)",
    ),
    "float-value": (
        """
domain: d
descriptors:
  - key: a
    value: 0.25
""",
        "0.25 is not of type 'string', 'integer', 'boolean', 'null'",
    ),
    "empty-replaces-name": (
        """
domain: d
descriptors:
  - key: a
    rate_limit:
      unit: second
      requests_per_unit: 1
      replaces: [{name: ""}]
""",
        "should be non-empty",
    ),
    "share-threshold-without-wildcard": (
        """
domain: d
descriptors:
  - key: a
    value: exact
    share_threshold: true
    rate_limit: {unit: second, requests_per_unit: 1}
""",
        "is not valid under any of the given schemas",
    ),
    "descriptor-not-a-map": ("domain: d\ndescriptors: [a]\n", "'a' is not of type 'object'"),
    "nested-error-is-found": (
        """
domain: d
descriptors:
  - key: a
    descriptors:
      - key: b
        descriptors:
          - key: c
            rate_limit: {unit: minutes, requests_per_unit: 1}
""",
        "'minutes' does not match",
    ),
}


@pytest.mark.parametrize("text", VALID.values(), ids=VALID.keys())
def test_valid_rule_files_are_accepted(validator: Draft202012Validator, text: str) -> None:
    assert errors(validator, text) == []


@pytest.mark.parametrize(("text", "expected"), INVALID.values(), ids=INVALID.keys())
def test_invalid_rule_files_are_rejected(
    validator: Draft202012Validator, text: str, expected: str
) -> None:
    found = errors(validator, text)
    assert found, "the document was accepted"
    assert any(expected in message for message in found), found


def test_every_property_has_a_title_and_a_description() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert schema["$id"] and schema["title"] and schema["description"]
    missing: list[str] = []

    def visit(node: Any, where: str) -> None:
        if not isinstance(node, dict):
            return
        for name, child in (node.get("properties") or {}).items():
            if "$ref" not in child and not (child.get("title") and child.get("description")):
                missing.append(f"{where}.{name}")
        for name, child in (node.get("$defs") or {}).items():
            visit(child, f"$defs.{name}")

    visit(schema, "(root)")
    assert missing == []
