"""Input validation and checks of JSON Schemas themselves (Draft 2020-12)."""

from __future__ import annotations

import pytest

from handlers.agents.runner import InvalidSchemaError, check_schema, validate_input

INPUT_SCHEMA = {
    "type": "object",
    "required": ["question"],
    "additionalProperties": False,
    "properties": {
        "question": {"type": "string", "minLength": 1},
        "options": {
            "type": "array",
            "items": {"type": "object", "properties": {"k": {"type": "integer"}}},
        },
    },
}


def test_valid_input_has_no_errors() -> None:
    assert validate_input({"question": "why?", "options": [{"k": 1}]}, INPUT_SCHEMA) == []


def test_each_invalid_field_is_listed_with_its_path() -> None:
    errors = validate_input({"options": [{"k": 1}, {"k": "two"}], "extra": True}, INPUT_SCHEMA)

    assert errors == [
        "$: 'question' is a required property",
        "$: Additional properties are not allowed ('extra' was unexpected)",
        "$.options[1].k: 'two' is not of type 'integer'",
    ]


def test_non_object_input_is_an_error_at_the_root() -> None:
    assert validate_input([1], INPUT_SCHEMA) == ["$: [1] is not of type 'object'"]


def test_formats_are_annotations_only() -> None:
    assert validate_input("not an email", {"type": "string", "format": "email"}) == []


@pytest.mark.parametrize(
    "schema",
    [{}, True, INPUT_SCHEMA, {"$defs": {"n": {"type": "number"}}, "$ref": "#/$defs/n"}],
)
def test_valid_schemas_pass_the_check(schema: object) -> None:
    assert check_schema(schema) == []


@pytest.mark.parametrize(
    ("schema", "error"),
    [
        ({"type": "objekt"}, "$.type: 'objekt' is not valid under any of the given schemas"),
        ({"properties": {"a": {"minimum": "1"}}}, "$.properties.a.minimum: '1' is not of type"),
        ({"required": "a"}, "$.required: 'a' is not of type 'array'"),
        ("a string", "$: a JSON Schema must be an object or a boolean"),
    ],
)
def test_invalid_schemas_are_explained(schema: object, error: str) -> None:
    errors = check_schema(schema)

    assert len(errors) == 1
    assert errors[0].startswith(error)


def test_validating_against_an_invalid_schema_raises() -> None:
    with pytest.raises(InvalidSchemaError) as raised:
        validate_input({}, {"type": 5})
    assert raised.value.errors[0].startswith("$.type: 5 is not valid")

    with pytest.raises(InvalidSchemaError, match="unresolvable"):
        validate_input({}, {"$ref": "https://schemas.example.invalid/remote.json"})
