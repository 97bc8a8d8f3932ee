"""JSON Schema (OpenAPI 3.0 flavour) of parameters and form fields → Python annotations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codegen.spec import JSON, Operation

__all__ = [
    "Success",
    "annotation",
    "constraints",
    "default_literal",
    "model_ref",
    "success_type",
]

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


def model_ref(models: dict[str, str], name: str | None) -> str | None:
    """``models.<Class>`` for a ``components/schemas`` name, ``None`` when it has no model."""
    return f"models.{models[name]}" if name and name in models else None


@dataclass(frozen=True)
class Success:
    """The Python type of an operation's success body: ``annotation`` is the value (a chunk's
    type when ``streamed``); ``media_type`` is set for bodies that are not JSON."""

    annotation: str
    streamed: bool
    media_type: str | None


def success_type(operation: Operation, models: dict[str, str]) -> Success:
    """What the operation's documented success response carries."""
    success = operation.success
    if success.streamed:
        text = any(t.startswith("text/") for t in success.content_types)
        return Success("str" if text else "bytes", True, success.content_types[0])
    if success.status == 204 or not success.content_types:
        return Success("None", False, None)
    if success.is_array:
        item = model_ref(models, success.item_schema_name)
        return Success(f"list[{item}]" if item else "list[Any]", False, None)
    model = model_ref(models, success.schema_name)
    if model is not None:
        return Success(model, False, None)
    if JSON in success.content_types:
        return Success("dict[str, Any]", False, None)
    return Success("bytes", False, success.content_types[0])
