"""JSON Schema (OpenAPI 3.0 flavour) of parameters and form fields → Python annotations."""

from __future__ import annotations

from typing import Any

__all__ = ["annotation", "constraints", "default_literal"]

_FORMATS = {
    ("string", "date-time"): "datetime.datetime",
    ("string", "date"): "datetime.date",
    ("string", "uuid"): "uuid.UUID",
    ("string", "binary"): "bytes",
}
_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}


def annotation(schema: dict[str, Any]) -> str:
    """The base type (no constraints) of a primitive, enum or array schema."""
    if "enum" in schema:
        values = ", ".join(repr(v) for v in schema["enum"] if v is not None)
        base = f"Literal[{values}]"
    elif schema.get("type") == "array":
        base = f"list[{annotation(schema.get('items', {}))}]"
    else:
        kind = schema.get("type", "string")
        base = _FORMATS.get((kind, schema.get("format", "")), _TYPES.get(kind, "str"))
    if schema.get("nullable"):
        base = f"{base} | None"
    return base


def constraints(schema: dict[str, Any]) -> str:
    """``Field(...)`` arguments for the schema's bounds, ``""`` when it has none."""
    arguments = []
    target = schema
    for keyword, name in (
        ("minimum", "ge"),
        ("maximum", "le"),
        ("minLength", "min_length"),
        ("maxLength", "max_length"),
        ("pattern", "pattern"),
        ("minItems", "min_length"),
        ("maxItems", "max_length"),
    ):
        if keyword in target:
            value = target[keyword]
            if keyword == "minimum" and target.get("exclusiveMinimum") is True:
                name = "gt"
            if keyword == "maximum" and target.get("exclusiveMaximum") is True:
                name = "lt"
            arguments.append(f"{name}={value!r}")
    return ", ".join(arguments)


def default_literal(schema: dict[str, Any]) -> str | None:
    """The schema's ``default`` as Python source, ``None`` when it has none."""
    if "default" not in schema:
        return None
    value = schema["default"]
    if schema.get("type") == "array" and isinstance(value, str):
        value = value.split(",") if value else []
    return repr(value)
