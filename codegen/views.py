"""Per-operation source fragments the templates lay out: signatures, calls, body binding."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codegen.spec import MULTIPART, STREAM_TYPES, Api, Operation, Parameter, python_name
from codegen.types import annotation, constraints, default_literal, model_ref, success_type

__all__ = ["OperationView", "operation_views"]

_DECORATORS = {
    "GET": "Get", "HEAD": "Head", "POST": "Post", "PUT": "Put",
    "PATCH": "Patch", "DELETE": "Delete", "OPTIONS": "Options",
}  # fmt: skip


@dataclass
class Argument:
    """One argument: how the route binds it, how the handler declares it, how it is passed."""

    name: str
    route: str | None  # the route method's parameter (None: computed in the body)
    handler: str | None  # the Protocol method's parameter (None: not passed to the handler)
    value: str  # the expression passed to the handler
    has_default: bool


def route_template(operation: Operation) -> str:
    """The webrest template of an operation's path: a path parameter with a ``pattern``
    becomes ``{name:regex}``, so the route matches exactly the values the contract allows
    (and a file path parameter may span segments)."""
    path = operation.path
    for parameter in operation.path_parameters:
        pattern = parameter.schema.get("pattern")
        if isinstance(pattern, str) and pattern:
            regex = pattern.removeprefix("^").removesuffix("$")
            path = path.replace(
                "{" + parameter.name + "}", "{" + parameter.name + ":" + regex + "}"
            )
    return path


@dataclass
class OperationView:
    operation: Operation
    decorator: str
    arguments: list[Argument]
    prelude: list[str]
    returns: str
    success_status: int
    produces: tuple[str, ...]
    consumes: tuple[str, ...]
    stream_media: str | None
    adapters: dict[str, str] = field(default_factory=dict)
    forms: dict[str, str] = field(default_factory=dict)

    @property
    def template(self) -> str:
        return route_template(self.operation)

    @property
    def route_parameters(self) -> list[str]:
        declared = [a for a in self.arguments if a.route is not None]
        ordered = [a for a in declared if not a.has_default] + [
            a for a in declared if a.has_default
        ]
        return [a.route for a in ordered if a.route is not None]

    @property
    def handler_parameters(self) -> list[str]:
        passed = [a for a in self.arguments if a.handler is not None]
        ordered = [a for a in passed if not a.has_default] + [a for a in passed if a.has_default]
        return [a.handler for a in ordered if a.handler is not None]

    @property
    def call(self) -> str:
        return ", ".join(f"{a.name}={a.value}" for a in self.arguments if a.handler is not None)


def _field(schema: dict[str, Any]) -> str:
    bounds = constraints(schema)
    return f", Field({bounds})" if bounds else ""


def _parameter_argument(parameter: Parameter) -> Argument:
    base = annotation(parameter.schema)
    source = "Header" if parameter.location == "header" else "Param"
    extras = f"{source}({parameter.name!r}){_field(parameter.schema)}"
    if parameter.schema.get("format") == "date-time":  # RFC 3339 only, not pydantic's lax forms
        extras += ", RFC3339"
    if parameter.comma_separated:
        extras += ', SeparatedBy(",")'
    default = default_literal(parameter.schema)
    optional = not parameter.required and default is None
    typed = f"{base} | None" if optional and "None" not in base else base
    suffix = " = None" if optional else (f" = {default}" if default is not None else "")
    name = parameter.py_name
    return Argument(
        name=name,
        route=f"{name}: Annotated[{typed}, {extras}]{suffix}",
        handler=f"{name}: {typed}{suffix}",
        value=name,
        has_default=bool(suffix),
    )


def _returns(operation: Operation, api_models: dict[str, str]) -> tuple[str, str | None]:
    """The handler's return annotation, and the media type of a non-JSON body."""
    success = success_type(operation, api_models)
    if success.streamed:
        chunk = (
            "AsyncIterator[str]" if success.annotation == "str" else "AsyncIterator[bytes] | bytes"
        )
        return chunk, success.media_type
    return success.annotation, success.media_type


def _form_fields(
    schema: dict[str, Any], required: set[str], json_field: str | None
) -> tuple[list[str], list[Argument]]:
    """``FormField(...)`` sources and the handler arguments of a multipart schema."""
    fields: list[str] = []
    arguments: list[Argument] = []
    for wire, prop in schema.get("properties", {}).items():
        if wire == json_field:
            continue
        name = python_name(wire)
        is_required = wire in required
        if prop.get("format") == "binary":
            fields.append(f"FormField({wire!r}, 'file', {is_required})")
            typed = "UploadFile" if is_required else "UploadFile | None"
        else:
            base = annotation(prop)
            bounds = constraints(prop)
            target = f"Annotated[{base}, Field({bounds})]" if bounds else base
            default = default_literal(prop)
            fields.append(
                f"FormField({wire!r}, 'value', {is_required}, TypeAdapter({target}), {default})"
            )
            typed = base if is_required or default is not None else f"{base} | None"
        suffix = (
            ""
            if is_required
            else (f" = {default_literal(prop)}" if "default" in prop else " = None")
        )
        arguments.append(
            Argument(
                name,
                None,
                f"{name}: {typed}{suffix}",
                f"cast({typed!r}, form[{wire!r}])",
                bool(suffix),
            )
        )
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict) and extra.get("format") == "binary":
        fields.append("FormField('files', 'files', False)")
        arguments.append(
            Argument(
                "files",
                None,
                "files: Mapping[str, UploadFile]",
                "cast('Mapping[str, UploadFile]', form['files'])",
                False,
            )
        )
    return fields, arguments


def operation_views(api: Api, api_models: dict[str, str]) -> list[OperationView]:
    views = []
    for operation in api.operations:
        arguments = [_parameter_argument(p) for p in operation.parameters]
        prelude: list[str] = []
        adapters: dict[str, str] = {}
        forms: dict[str, str] = {}
        consumes = tuple(b.content_type for b in operation.bodies)
        if (
            MULTIPART in consumes
        ):  # a url-encoded form is a form without files (as FastAPI reads it)
            consumes += ("application/x-www-form-urlencoded",)
        json_body = operation.json_body
        form_body = operation.multipart_body
        upper = operation.operation_id.upper()
        if operation.raw_body:
            # the schema documents the body; the handler parses the bytes itself
            arguments.append(Argument("body", None, "body: bytes", "body", False))
            prelude.append("body = await request.body()")
            json_body = form_body = None
            consumes = ()  # any media type, as the handler decides
        if json_body is not None or form_body is not None:
            required = operation.body_required
            arguments.append(
                Argument(
                    "payload",
                    "payload: Annotated[object, Entity]" + ("" if required else " = None"),
                    None,
                    "",
                    not required,
                )
            )
        json_adapter = "None"
        if json_body is not None:
            model = model_ref(api_models, json_body.schema_name) or "dict[str, Any]"
            json_adapter = f"_{upper}_BODY"
            adapters[json_adapter] = f"TypeAdapter({model})"
            arguments.append(
                Argument(
                    "body",
                    None,
                    f"body: {model}"
                    if required and form_body is None
                    else f"body: {model} | None = None",
                    f"cast({model!r}, body)"
                    if required and form_body is None
                    else f"cast('{model} | None', body)",
                    not (required and form_body is None),
                )
            )
        if form_body is not None:
            json_field = (
                "_json"
                if json_body is not None and "_json" in form_body.schema.get("properties", {})
                else None
            )
            fields, form_arguments = _form_fields(
                form_body.schema, set(form_body.schema.get("required", [])), json_field
            )
            if json_body is not None:
                form_arguments = [_optional(a) for a in form_arguments]
            forms[f"_{upper}_FORM"] = "(" + "".join(f"{f}, " for f in fields) + ")"
            arguments.extend(form_arguments)
            form_spec = f"_{upper}_FORM"
            quoted_field = repr(json_field)
            forbid = form_body.schema.get("additionalProperties") is False
            # x-bare-field on the _json property: a _json that is not the JSON body's shape is
            # the value of that one field of it (codegen/runtime/bodies.py, _json_field)
            json_property = form_body.schema.get("properties", {}).get(json_field or "", {})
            bare = json_property.get("x-bare-field")
            prelude.append(
                f"body, form = bind_payload(request.headers.get('content-type'), payload, "
                f"json_adapter={json_adapter}, form_fields={form_spec}, json_field={quoted_field}"
                + (f", json_bare_field={bare!r}" if bare else "")
                + (", forbid_extra=True)" if forbid else ")")
            )
        elif json_body is not None:
            if required:
                prelude.append(f"body = validate_body({json_adapter}, payload)")
            else:
                prelude.append(
                    f"body = None if payload is None else validate_body({json_adapter}, payload)"
                )
        returns, media = _returns(operation, api_models)
        success = operation.success
        streamed_types = tuple(t for t in success.content_types if t in STREAM_TYPES)
        if success.streamed and len(streamed_types) > 1:
            arguments.append(
                Argument(
                    "media_type",
                    None,
                    "media_type: str",
                    f"request.negotiated or {streamed_types[0]!r}",
                    False,
                )
            )
        produces = success.content_types if success.content_types else ()
        views.append(
            OperationView(
                operation=operation,
                decorator=_DECORATORS[operation.method],
                arguments=arguments,
                prelude=prelude,
                returns=returns,
                success_status=success.status,
                produces=tuple(produces),
                consumes=consumes,
                stream_media=media,
                adapters=adapters,
                forms=forms,
            )
        )
    return views


def _optional(argument: Argument) -> Argument:
    if argument.has_default or argument.name == "files" or argument.handler is None:
        return argument
    name, _, typed = argument.handler.partition(": ")
    return Argument(
        argument.name,
        argument.route,
        f"{name}: {typed} | None = None",
        argument.value.replace(f"cast({typed!r}", f"cast('{typed} | None'"),
        True,
    )
