"""Fixtures of the rule-file tests."""

from __future__ import annotations

import jsonschema  # type: ignore[import-untyped]  # types-jsonschema is not installed
import pytest

from tests.ratelimit.config.schema_cases import schema_validator


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    """The rule-file schema's validator."""
    return schema_validator()
