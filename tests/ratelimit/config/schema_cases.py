"""What the schema agreement tests share: the rule-file JSON schema, how a YAML text is checked
against it and against the loader, and the three agreement tests over tables of cases
(``test_schema_agreement.py`` for upstream's fields, ``test_schema_algorithm_fields.py`` for
issue 23's)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # types-jsonschema is not installed
import pytest
import yaml

from handlers.ratelimit.config.parse import ConfigError, load_rule_set

SCHEMA_PATH = Path(__file__).resolve().parents[3] / "specs" / "ratelimit-config.schema.json"

Test = Callable[..., None]


def schema_validator() -> jsonschema.protocols.Validator:
    """The rule-file schema's validator (the schema itself checked first)."""
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


def agreement_tests(
    valid: Mapping[str, str],
    invalid: Mapping[str, str],
    semantic_only: Mapping[str, tuple[str, str]],
    *,
    exact_messages: bool,
) -> tuple[Test, Test, Test]:
    """The three agreement tests over these cases: valid for both, invalid for both, and
    valid for the schema but refused by the loader's semantic checks with the message given
    (the whole message when ``exact_messages``, else a part of it). Each test module binds
    them to ``test_*`` names of its own for pytest to collect (uses the ``validator`` fixture
    of ``conftest.py``)."""

    @pytest.mark.parametrize("text", valid.values(), ids=valid.keys())
    def valid_for_both(validator: jsonschema.protocols.Validator, text: str) -> None:
        assert schema_accepts(validator, text)
        assert loader_error(text) is None

    @pytest.mark.parametrize("text", invalid.values(), ids=invalid.keys())
    def invalid_for_both(validator: jsonschema.protocols.Validator, text: str) -> None:
        assert not schema_accepts(validator, text)
        assert loader_error(text) is not None

    @pytest.mark.parametrize(
        ("text", "message"), semantic_only.values(), ids=list(semantic_only.keys())
    )
    def semantic_checks_beyond_the_schema(
        validator: jsonschema.protocols.Validator, text: str, message: str
    ) -> None:
        assert schema_accepts(validator, text)
        error = loader_error(text)
        assert error is not None
        assert error == message if exact_messages else message in error

    return valid_for_both, invalid_for_both, semantic_checks_beyond_the_schema
