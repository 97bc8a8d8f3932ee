"""Issue 23's rule fields (``algorithm``, ``burst``, ``unit_multiplier``, ``window``,
``rate_limits``) in ``specs/ratelimit-config.schema.json``: the schema and the loader agree on
them, as ``test_schema_agreement.py`` checks for upstream's fields, and every YAML example of
the README's algorithms section is valid for both."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # types-jsonschema is not installed
import pytest
import yaml

from tests.ratelimit.config.schema_cases import (
    SCHEMA_PATH,
    agreement_tests,
    loader_error,
)

README = Path(__file__).resolve().parents[3] / "handlers" / "ratelimit" / "README.md"
SECTION = "## Algorithms, windows and several limits"
NEW_KEYS = ("algorithm", "burst", "unit_multiplier", "window", "rate_limits")

HEAD = "domain: d\ndescriptors:\n  - key: k\n"


def body(text: str) -> str:
    """A rule file of one descriptor ``k`` whose keys (at the descriptor's level) are
    ``text``, one per line."""
    return HEAD + "".join(f"    {line}\n" for line in text.splitlines())


VALID = {
    "sliding window": body(
        "rate_limit: {unit: second, requests_per_unit: 5, algorithm: sliding_window}"
    ),
    "fixed window spelt": body(
        "rate_limit: {unit: MINUTE, requests_per_unit: 5, algorithm: fixed_window}"
    ),
    "token bucket with burst": body(
        "rate_limit: {unit: minute, requests_per_unit: 10, algorithm: token_bucket, burst: 3}"
    ),
    "unit multiplier": body(
        "rate_limit: {unit: second, unit_multiplier: 30, requests_per_unit: 5}"
    ),
    "windows": HEAD
    + "".join(
        f"  - key: w{index}\n    rate_limit: {{window: {window}, requests_per_unit: 5}}\n"
        for index, window in enumerate(("500ms", "30s", "5m", "1h30m", "1d", "1s500ms", "365d"))
    ),
    "nulls are absent": body(
        "rate_limit: {unit: second, requests_per_unit: 5, algorithm: ~, burst: ~,"
        " unit_multiplier: ~, window: ~}\nrate_limits: ~"
    ),
    "rate_limits": body(
        "rate_limits:\n"
        "  - {unit: second, requests_per_unit: 3, algorithm: token_bucket, name: fast}\n"
        "  - {window: 1d, requests_per_unit: 10000, name: slow, unlimited: false, replaces: []}"
    ),
    "rate_limits with a null rate_limit": body(
        "rate_limit: ~\nrate_limits:\n  - {unit: second, requests_per_unit: 1}"
    ),
    "unlimited stays upstream's": body("rate_limit: {unlimited: true, window: ~}"),
}

INVALID = {
    "unknown algorithm": body(
        "rate_limit: {unit: second, requests_per_unit: 5, algorithm: leaky_bucket}"
    ),
    "algorithm in capitals": body(
        "rate_limit: {unit: second, requests_per_unit: 5, algorithm: SLIDING_WINDOW}"
    ),
    "burst 0": body(
        "rate_limit: {unit: second, requests_per_unit: 5, algorithm: token_bucket, burst: 0}"
    ),
    "burst as text": body(
        "rate_limit: {unit: second, requests_per_unit: 5, algorithm: token_bucket, burst: '3'}"
    ),
    "burst without an algorithm": body(
        "rate_limit: {unit: second, requests_per_unit: 5, burst: 3}"
    ),
    "burst with a sliding window": body(
        "rate_limit: {unit: second, requests_per_unit: 5, algorithm: sliding_window, burst: 3}"
    ),
    "unit_multiplier 0": body(
        "rate_limit: {unit: second, unit_multiplier: 0, requests_per_unit: 5}"
    ),
    "unit_multiplier without a unit": body(
        "rate_limit: {unit_multiplier: 2, requests_per_unit: 5}"
    ),
    "window without its unit": body("rate_limit: {window: 30, requests_per_unit: 5}"),
    "window out of order": body("rate_limit: {window: 30s1m, requests_per_unit: 5}"),
    "window with a space": body("rate_limit: {window: 30 s, requests_per_unit: 5}"),
    "window in words": body("rate_limit: {window: 1 minute, requests_per_unit: 5}"),
    "window empty": body("rate_limit: {window: '', requests_per_unit: 5}"),
    "window and unit": body("rate_limit: {window: 1s, unit: second, requests_per_unit: 5}"),
    "window and unit_multiplier": body(
        "rate_limit: {window: 1s, unit_multiplier: 2, requests_per_unit: 5}"
    ),
    "window without requests": body("rate_limit: {window: 1s, algorithm: sliding_window}"),
    "neither unit nor window": body(
        "rate_limit: {requests_per_unit: 5, algorithm: sliding_window}"
    ),
    "unlimited with an algorithm": body("rate_limit: {unlimited: true, algorithm: token_bucket}"),
    "unlimited with a window": body("rate_limit: {unlimited: true, window: 1s}"),
    "rate_limits empty": body("rate_limits: []"),
    "rate_limits not a list": body("rate_limits: {unit: second, requests_per_unit: 1}"),
    "rate_limits of scalars": body("rate_limits: [5]"),
    "rate_limits with a null entry": body("rate_limits: [~]"),
    "rate_limit and rate_limits": body(
        "rate_limit: {unit: second, requests_per_unit: 1}\n"
        "rate_limits:\n  - {unit: second, requests_per_unit: 1}"
    ),
    "an unlimited entry": body(
        "rate_limits:\n  - {unit: second, requests_per_unit: 1}\n  - {unlimited: true}"
    ),
    "an entry that replaces": body(
        "rate_limits:\n  - {unit: second, requests_per_unit: 1, replaces: [{name: x}]}"
    ),
    "an entry with an unknown key": body(
        "rate_limits:\n  - {unit: second, requests_per_unit: 1, burstt: 2}"
    ),
    "rate_limits inside rate_limit": body(
        "rate_limit: {unit: second, requests_per_unit: 1, rate_limits: []}"
    ),
    "algorithm on the descriptor": body(
        "algorithm: token_bucket\nrate_limit: {unit: second, requests_per_unit: 1}"
    ),
    "window at the top": "domain: d\nwindow: 1s\ndescriptors: []\n",
}

# Valid for the schema (it cannot compare values), refused by the loader's checks.
SEMANTIC_ONLY = {
    "window too short": (
        body("rate_limit: {window: 50ms, requests_per_unit: 5}"),
        "rate limit window '50ms' is out of range: from 100ms to 365d",
    ),
    "window too long": (
        body("rate_limit: {window: 366d, requests_per_unit: 5}"),
        "rate limit window '366d' is out of range: from 100ms to 365d",
    ),
    "multiplied window too long": (
        body("rate_limit: {unit: year, unit_multiplier: 2, requests_per_unit: 5}"),
        "out of range: from 100ms to 365d",
    ),
    "burst the window cannot refill": (
        body(
            "rate_limit: {unit: year, requests_per_unit: 1, algorithm: token_bucket,"
            " burst: 1000000}"
        ),
        "token bucket: burst 1000000 at 1 per 31536000000 ms is too large",
    ),
}


test_valid_for_both, test_invalid_for_both, test_semantic_checks_beyond_the_schema = (
    agreement_tests(VALID, INVALID, SEMANTIC_ONLY, exact_messages=False)
)


def readme_examples() -> list[str]:
    """The YAML blocks of the README's algorithms section (up to the next ``## `` title)."""
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION + "\n")
    end = text.find("\n## ", start + len(SECTION))
    section = text[start : end if end != -1 else len(text)]
    return re.findall(r"^```yaml\n(.*?)^```", section, re.MULTILINE | re.DOTALL)


def as_rule_file(example: str) -> str:
    """An example as a whole file: one that shows only ``descriptors`` gets a domain."""
    document: Any = yaml.safe_load(example)
    if isinstance(document, dict) and "domain" not in document:
        return "domain: readme\n" + example
    return example


def test_the_readme_shows_every_new_key() -> None:
    examples = readme_examples()
    assert examples, f"no YAML example in {README.name}'s section {SECTION!r}"
    shown = "\n".join(examples)
    assert [key for key in NEW_KEYS if not re.search(rf"\b{key}:", shown)] == []


@pytest.mark.parametrize("example", readme_examples())
def test_readme_examples_are_valid_for_both(
    validator: jsonschema.protocols.Validator, example: str
) -> None:
    text = as_rule_file(example)
    found = [error.message for error in validator.iter_errors(_json(yaml.safe_load(text)))]
    assert found == []
    assert loader_error(text) is None


def test_the_enum_is_the_loaders() -> None:
    from handlers.ratelimit.config.model import ALGORITHMS

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    algorithm = schema["$defs"]["rate_limit"]["properties"]["algorithm"]
    assert algorithm["enum"] == [*ALGORITHMS, None]


def _json(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json(item) for item in value]
    return value
