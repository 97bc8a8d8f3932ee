"""Validating request bodies the way each error style expects."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError
from starlette.datastructures import UploadFile

from webrest import BadRequest, ErrorDetail, HttpError, JsonReader
from webrest.errors import validation_details
from webrest.negotiation import parse_media_type

__all__ = ["FormField", "bind_form", "bind_payload", "validate_body"]


def validate_body(adapter: TypeAdapter[Any], raw: object) -> Any:
    """Validate a parsed JSON body as FastAPI does (Python mode, attributes allowed), errors
    located under ``body``."""
    try:
        return adapter.validate_python(raw, from_attributes=True)
    except ValidationError as exc:
        details = validation_details(exc, ("body",))
        raise BadRequest("Invalid request body", details) from None


@dataclass(frozen=True)
class FormField:
    """One property of a multipart body: a file, a map of extra files, or a value."""

    name: str
    kind: str  # "file" | "files" | "value"
    required: bool
    adapter: TypeAdapter[Any] | None = None
    default: object = None


def bind_form(
    form: object,
    fields: Sequence[FormField],
    *,
    forbid_extra: bool = False,
    also_known: Sequence[str] = (),
) -> dict[str, object]:
    """Check a parsed multipart form against its fields; every problem at once, under
    ``body``. Extra files go to the ``files`` field when the form declares one; other extra
    parts are rejected when ``forbid_extra``."""
    parts: Mapping[str, object] = form if isinstance(form, Mapping) else {}
    values: dict[str, object] = {}
    errors: list[ErrorDetail] = []
    known = {f.name for f in fields if f.kind != "files"} | set(also_known)
    if forbid_extra and not any(f.kind == "files" for f in fields):
        for name, value in parts.items():
            if name not in known:
                errors.append(
                    ErrorDetail(
                        ("body", name),
                        "Extra inputs are not permitted",
                        "extra_forbidden",
                        _shown(value),
                    )
                )
    for field in fields:
        if field.kind == "files":
            extra: dict[str, UploadFile] = {}
            for name, value in parts.items():
                if name in known:
                    continue
                if isinstance(value, UploadFile):
                    extra[name] = value
                elif isinstance(value, list):  # the same name on several parts
                    errors.append(
                        ErrorDetail(
                            ("body", name),
                            "Value error, each file needs a part name of its own "
                            "(this one is repeated)",
                            "value_error",
                            _shown(value),
                        )
                    )
                else:
                    errors.append(
                        ErrorDetail(("body", name), "Expected a file part", "value_error", value)
                    )
            values[field.name] = extra
            continue
        value = parts.get(field.name)
        if isinstance(value, list):
            value = value[-1]
        if value is None:
            if field.required:
                errors.append(ErrorDetail(("body", field.name), "Field required", "missing", None))
            else:
                values[field.name] = field.default
            continue
        if field.kind == "file":
            if isinstance(value, UploadFile):
                values[field.name] = value
            else:
                errors.append(
                    ErrorDetail(
                        ("body", field.name),
                        f"Value error, Expected UploadFile, received: {type(value)}",
                        "value_error",
                        value,
                    )
                )
            continue
        if isinstance(value, UploadFile):
            errors.append(
                ErrorDetail(
                    ("body", field.name), "Input should be a valid string", "string_type", None
                )
            )
            continue
        if field.adapter is None:
            values[field.name] = value
            continue
        try:
            values[field.name] = field.adapter.validate_python(value)
        except ValidationError as exc:
            errors.extend(validation_details(exc, ("body", field.name)))
    if errors:
        raise BadRequest("Invalid form body", errors)
    return values


def _shown(value: object) -> object:
    """A form part as an error's ``input`` shows it: a file by its name (the error is written
    as JSON), the parts of a repeated name as a list."""
    if isinstance(value, UploadFile):
        return value.filename
    if isinstance(value, list):
        return [_shown(item) for item in value]
    return value


_FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")


def bind_payload(
    content_type: str | None,
    raw: object,
    *,
    json_adapter: TypeAdapter[Any] | None,
    form_fields: Sequence[FormField] | None,
    json_field: str | None = None,
    json_bare_field: str | None = None,
    forbid_extra: bool = False,
) -> tuple[Any, dict[str, object]]:
    """The body of an operation that takes JSON and/or a multipart form.

    Returns the validated JSON model (or ``None``) and the form's values. A form may carry
    the JSON model in one text field (``json_field``, e.g. ``_json``) beside its files. With
    ``json_bare_field`` (the spec's ``x-bare-field``), that text may also be the bare value of
    that one field of the model: see :func:`_json_field`.
    """
    is_form = content_type is not None and parse_media_type(content_type)[0] in _FORM_TYPES
    empty: dict[str, object] = {
        field.name: ({} if field.kind == "files" else None) for field in form_fields or ()
    }
    if raw is None and content_type is None:  # no body (a missing required one is refused
        return None, empty  # by the binding first); a JSON `null` is validated below
    if is_form and form_fields is not None:
        values = bind_form(
            raw,
            [f for f in form_fields if f.name != json_field],
            forbid_extra=forbid_extra,
            also_known=[json_field] if json_field else [],
        )
        body: Any = None
        if json_field is not None and json_adapter is not None:
            text = raw.get(json_field) if isinstance(raw, Mapping) else None
            body = _json_field(json_adapter, json_field, text, json_bare_field)
        return body, values
    if json_adapter is not None and not is_form:
        return validate_body(json_adapter, raw), empty
    raise HttpError(415, f"Unsupported request body type {content_type}")


@functools.cache
def _wire_names(adapter: TypeAdapter[Any]) -> frozenset[str]:
    """The property names of a model adapter's JSON schema (by alias), computed once."""
    return frozenset(adapter.json_schema(by_alias=True).get("properties", {}))


def _wrapped(adapter: TypeAdapter[Any], parsed: object) -> bool:
    """Whether ``parsed`` has the shape of the model: an object whose keys are all its wire
    names and that validates (keys and value types decide, nothing else)."""
    if not isinstance(parsed, dict) or not set(parsed) <= _wire_names(adapter):
        return False
    try:
        adapter.validate_python(parsed)
    except ValidationError:
        return False
    return True


_JSON_TEXT = JsonReader()


def _json_field(
    adapter: TypeAdapter[Any], name: str, text: object, bare_field: str | None = None
) -> Any:
    """The model in the form's JSON text field ``name``. With ``bare_field``, a text that is
    not the model's shape (:func:`_wrapped`) is taken as the value of ``bare_field`` alone:
    ``{"customer": "ACME"}`` is ``{"<bare_field>": {"customer": "ACME"}}``."""
    if text is None:
        return adapter.validate_python({}, from_attributes=True)
    if not isinstance(text, str):
        raise BadRequest(
            "Invalid form body", [ErrorDetail(("body", name), "Expected JSON text", "value_error")]
        )
    try:  # bounded as a JSON body is: nesting depth and number sizes
        parsed = _JSON_TEXT.parse(text)
    except BadRequest as exc:
        detail = ErrorDetail(("body", name), f"Invalid JSON: {exc.message}", "json_invalid", text)
        raise BadRequest("Invalid form body", [detail]) from None
    if bare_field is not None and not _wrapped(adapter, parsed):
        parsed = {bare_field: parsed}
    try:
        return adapter.validate_python(parsed, from_attributes=True)
    except ValidationError as exc:
        raise BadRequest("Invalid form body", validation_details(exc, ("body", name))) from None
