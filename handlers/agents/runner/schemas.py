"""JSON Schema (Draft 2020-12) checks of agents' input and output schemas and documents.

Errors are strings ``"<JSON path>: <message>"`` such as ``"$.items[0].name: 5 is not of type
'string'"`` (``$`` is the document itself), sorted by path. Formats (``"format": "email"``) are
annotations only, as Draft 2020-12 specifies by default, so results do not depend on which
optional format libraries are installed. Remote ``$ref`` targets are never fetched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]
from referencing.exceptions import Unresolvable

_META_VALIDATOR = Draft202012Validator(Draft202012Validator.META_SCHEMA)


class InvalidSchemaError(ValueError):
    """The schema itself is not a valid JSON Schema; ``errors`` lists why."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("invalid JSON Schema: " + "; ".join(errors))
        self.errors = errors


def check_schema(schema: object) -> list[str]:
    """Why ``schema`` is not a valid Draft 2020-12 JSON Schema; empty when it is."""
    if isinstance(schema, Mapping):
        schema = dict(schema)
    if not isinstance(schema, dict | bool):
        return ["$: a JSON Schema must be an object or a boolean"]
    return _format_errors(_META_VALIDATOR.iter_errors(schema))


def validate_input(input_json: object, input_schema: object) -> list[str]:
    """Why ``input_json`` does not match ``input_schema``; empty when it does.

    Raises InvalidSchemaError when the schema itself is invalid (a stored agent's schema should
    have been checked with check_schema when it was saved).
    """
    return validate_document(input_json, input_schema)


def validate_document(document: object, schema: object) -> list[str]:
    """Why ``document`` does not match ``schema``; raises InvalidSchemaError for a bad schema."""
    if isinstance(schema, Mapping):
        schema = dict(schema)
    schema_errors = check_schema(schema)
    if schema_errors:
        raise InvalidSchemaError(schema_errors)
    try:
        return _format_errors(Draft202012Validator(schema).iter_errors(document))
    except Unresolvable as exc:
        raise InvalidSchemaError([f"unresolvable $ref: {exc}"]) from exc


def _format_errors(errors: Iterable[ValidationError]) -> list[str]:
    ordered = sorted(errors, key=lambda error: (list(map(str, error.absolute_path)), error.message))
    return [f"{error.json_path}: {error.message}" for error in ordered]
