"""The loader and ``specs/ratelimit-config.schema.json`` agree on what a valid rule file is.

The schema is the structural check; the loader adds the semantic checks the schema describes
as its own (duplicate composite keys, ``replaces`` naming the rule's own name, metadata
conversion), so a file may pass the schema and still fail to load for those reasons only.
"""

from __future__ import annotations

from tests.ratelimit.config.schema_cases import agreement_tests
from tests.specs.test_ratelimit_config_schema import INVALID as SPEC_INVALID
from tests.specs.test_ratelimit_config_schema import VALID as SPEC_VALID

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


test_valid_for_both, test_invalid_for_both, test_semantic_checks_beyond_the_schema = (
    agreement_tests(VALID, INVALID, SEMANTIC_ONLY, exact_messages=True)
)
