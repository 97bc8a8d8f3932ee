"""The OpenAPI 3.1 document of an :class:`webrest.Application`, generated from its routes.

Everything comes from what registration already computed: each endpoint's path template,
its binding plan (sources, pydantic adapters, defaults, conversions), its route declaration
(``status``, ``produces``, ``responses``, ``operation_id``, ``summary``, ``tags``) and the
method's docstring and return annotation. Pydantic models end up in ``components/schemas``.

Besides what the routes declare, every operation documents the errors webrest answers by
itself, with the ``{"status": ..., "message": ...}`` body of the default error renderer.

A ``Multipart`` (or ``Stream``) parameter can name the type that describes its body for the
document, e.g. ``Annotated[Multipart, AvatarUpload]`` with ``avatar: bytes`` in the model;
binding ignores it.
"""

from __future__ import annotations

import copy
import inspect
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from http import HTTPStatus
from typing import Any, Literal, Protocol, get_args, get_origin

from pydantic import TypeAdapter
from pydantic.errors import PydanticUserError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from webrest.api import Endpoint, RestApi
from webrest.asynchronous import Async
from webrest.binding import MISSING, Kind, ParameterPlan
from webrest.conversions import Conversion, SeparatedBy
from webrest.error_rendering import default_error_renderer
from webrest.errors import HttpError
from webrest.formats import FormReader, OctetStreamReader
from webrest.negotiation import parse_media_type
from webrest.response import Response
from webrest.sources import Matrix, Source

__all__ = ["MountedApis", "generate_openapi"]

Mode = Literal["validation", "serialization"]
Schema = dict[str, Any]

_REF = "#/components/schemas/{model}"
_METHODS = ("GET", "PUT", "POST", "DELETE", "OPTIONS", "PATCH")
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
_BINARY: Schema = {"type": "string", "format": "binary"}
_ERROR_SCHEMA: Schema = {
    "type": "object",
    "properties": {"status": {"type": "integer"}, "message": {"type": "string"}},
    "required": ["status", "message"],
}
_PARAMETER_KINDS = {Kind.PATH: "path", Kind.QUERY: "query", Kind.HEADER: "header"}
_DELIMITED = {",": ("form", False), "|": ("pipeDelimited", False), " ": ("spaceDelimited", False)}


class MountedApis(Protocol):
    """What the document is generated from: the APIs by mount prefix, and the document's
    title and version (an :class:`~webrest.application.Application` is one)."""

    @property
    def mounts(self) -> Sequence[tuple[str, RestApi]]: ...

    @property
    def title(self) -> str: ...

    @property
    def version(self) -> str: ...


def generate_openapi(app: MountedApis) -> dict[str, Any]:
    """The OpenAPI 3.1 document of every route of every API mounted on ``app``.

    The output is deterministic: paths, methods, responses and component schemas are sorted,
    parameters keep the order of the method's signature.
    """
    builder = _Builder()
    for _, api in app.mounts:
        for endpoint in api.endpoints:
            if endpoint.method != "HEAD":  # answered by the GET route, or invisible to clients
                builder.add(api, endpoint)
    return builder.document(app.title, app.version)


class _Schemas:
    """Type adapters waiting for their JSON schema, generated together at the end so that
    model definitions are shared (and their names made unique) across the document."""

    def __init__(self) -> None:
        self._inputs: dict[tuple[int, Mode], tuple[int, Mode, TypeAdapter[Any]]] = {}
        self._holders: list[tuple[Schema, int, Mode]] = []

    def ref(self, adapter: TypeAdapter[Any], mode: Mode) -> Schema:
        """A placeholder dict, filled with the adapter's schema by :meth:`resolve`."""
        key = (id(adapter), mode)
        if key not in self._inputs:
            try:
                adapter.json_schema(mode=mode)
            except PydanticUserError:  # not representable (a callable, an arbitrary class...)
                return {}
            self._inputs[key] = (id(adapter), mode, adapter)
        holder: Schema = {}
        self._holders.append((holder, *key))
        return holder

    def resolve(self) -> dict[str, Schema]:
        """Fill every placeholder; return the model definitions by name."""
        if not self._inputs:
            return {}
        schemas, definitions = TypeAdapter.json_schemas(
            list(self._inputs.values()), ref_template=_REF
        )
        for holder, identity, mode in self._holders:
            holder.update(schemas[(identity, mode)])
        defs: dict[str, Schema] = definitions.get("$defs", {})
        return defs


class _Builder:
    def __init__(self) -> None:
        self.paths: dict[str, dict[str, Schema]] = {}
        self.schemas = _Schemas()
        self.operation_ids: set[str] = set()
        self.error_ref: Schema = {}  # filled once the model names are known
        self.finishers: list[Callable[[dict[str, Schema]], None]] = []

    def document(self, title: str, version: str) -> dict[str, Any]:
        definitions = self.schemas.resolve()
        for finish in self.finishers:
            finish(definitions)
        error_name = "Error" if "Error" not in definitions else "HttpError"
        definitions[error_name] = copy.deepcopy(_ERROR_SCHEMA)
        self.error_ref["$ref"] = _REF.format(model=error_name)
        paths = {
            path: {m.lower(): operations[m] for m in _METHODS if m in operations}
            for path, operations in sorted(self.paths.items())
        }
        return {
            "openapi": "3.1.0",
            "info": {"title": title, "version": version},
            "paths": paths,
            "components": {"schemas": dict(sorted(definitions.items()))},
        }

    # -- one operation ---------------------------------------------------------------------------

    def add(self, api: RestApi, endpoint: Endpoint) -> None:
        target = endpoint.target
        declaration = endpoint.declaration
        owner = getattr(target.function, "__self__", None)
        class_name = type(owner).__qualname__ if owner is not None else ""
        method_name = getattr(target.function, "__name__", target.name.rsplit(".", 1)[-1])
        operation: Schema = {
            "operationId": self._operation_id(
                declaration.operation_id or ".".join(filter(None, (class_name, method_name)))
            ),
            "tags": list(declaration.tags) or ([class_name] if class_name else []),
        }
        if not operation["tags"]:
            del operation["tags"]
        if declaration.summary:
            operation["summary"] = declaration.summary
        doc = inspect.getdoc(target.function)
        if doc:
            operation["description"] = doc

        plans = endpoint.plan.parameters
        hints = _hints(target.function)
        parameters = self._parameters(endpoint, plans)
        if parameters:
            operation["parameters"] = parameters
        body = self._request_body(api, plans, hints, declaration.consumes)
        if body is not None:
            operation["requestBody"] = body
        operation["responses"] = self._responses(api, endpoint, hints, body is not None)

        path = _openapi_path(api.base, endpoint.template.plain)
        self.paths.setdefault(path, {})[endpoint.method] = operation

    def _operation_id(self, wanted: str) -> str:
        candidate, counter = wanted, 1
        while candidate in self.operation_ids:
            counter += 1
            candidate = f"{wanted}_{counter}"
        self.operation_ids.add(candidate)
        return candidate

    def _parameters(self, endpoint: Endpoint, plans: Iterable[ParameterPlan]) -> list[Schema]:
        template = endpoint.template
        documented: list[Schema] = []
        bound_path: set[str] = set()
        for plan in plans:
            location = _PARAMETER_KINDS.get(plan.kind)
            if location is None:
                continue
            parameter: Schema = {"name": plan.key, "in": location}
            if plan.kind is Kind.PATH:
                bound_path.add(plan.key)
                parameter["required"] = True
                parameter["schema"] = self._path_schema(plan, template.constraints.get(plan.key))
            else:
                parameter["required"] = plan.required
                parameter["schema"] = schema = self._value_schema(plan)
                if plan.default is not MISSING and plan.default is not None:
                    default = _jsonable(plan.default)
                    if default is not MISSING:
                        schema["default"] = default
                if plan.is_list:
                    separator = _separator(plan.conversions)
                    if separator in _DELIMITED and location == "query":
                        style, explode = _DELIMITED[separator]
                        parameter["style"], parameter["explode"] = style, explode
            documented.append(parameter)
        for name in template.names:  # captured by the template, not bound to the method
            if name not in bound_path:
                documented.append(
                    {
                        "name": name,
                        "in": "path",
                        "required": True,
                        "schema": {
                            "type": "string",
                            "pattern": _pattern(template.constraints.get(name)),
                        },
                    }
                )
        return documented

    def _path_schema(self, plan: ParameterPlan, constraint: str | None) -> Schema:
        if any(isinstance(c, Matrix) for c in plan.conversions) or plan.adapter is None:
            return {"type": "string", "pattern": _pattern(constraint)}
        schema = self.schemas.ref(plan.adapter, "validation")

        def finish(definitions: dict[str, Schema]) -> None:
            _strip_null(schema)
            if schema.get("type") != "string":
                return  # a number's constraint is its type; an enum's, its values
            if "pattern" in schema:  # the type's own pattern applies too
                schema.setdefault("allOf", []).append({"pattern": _pattern(constraint)})
            else:
                schema["pattern"] = _pattern(constraint)

        self.finishers.append(finish)
        return schema

    def _value_schema(self, plan: ParameterPlan) -> Schema:
        """A query or header parameter: the adapter's schema, without ``null`` (absence is how
        a request says ``None``)."""
        if plan.adapter is None:
            if plan.is_list:
                return {"type": "array", "items": {"type": "string"}}
            return {"type": "string"}
        schema = self.schemas.ref(plan.adapter, "validation")

        self.finishers.append(lambda definitions: _strip_null(schema))
        return schema

    def _request_body(
        self,
        api: RestApi,
        plans: Sequence[ParameterPlan],
        hints: dict[str, Any],
        consumes: Sequence[str],
    ) -> Schema | None:
        content: dict[str, Schema] = {}
        required = False
        entities = [plan for plan in plans if plan.kind is Kind.ENTITY]
        for plan in plans:
            if plan.kind is Kind.BODY:
                schema = self._body_schema(plan)
                content["text/plain"] = {"schema": schema}
                required = required or plan.required
            elif plan.kind in (Kind.STREAM, Kind.MULTIPART):
                mime = (
                    "multipart/form-data"
                    if plan.kind is Kind.MULTIPART
                    else "application/octet-stream"
                )
                content[mime] = self._stream_content(plan, hints)
                required = True
        if entities:
            self._entity_content(api, entities, content, consumes)
            required = required or any(plan.required for plan in entities)
        if not content and not entities:
            return None
        return {"required": required, "content": content}

    def _body_schema(self, plan: ParameterPlan) -> Schema:
        if plan.adapter is None:
            schema: Schema = {"type": "string"}
            if plan.required:
                schema["minLength"] = 1  # an empty body counts as none
            return schema
        return self.schemas.ref(plan.adapter, "validation")

    def _stream_content(self, plan: ParameterPlan, hints: dict[str, Any]) -> Schema:
        described = _described_by(hints.get(plan.name))
        adapter = _adapter(described)
        if adapter is not None:
            media: Schema = {"schema": self.schemas.ref(adapter, "validation")}
            if plan.kind is Kind.MULTIPART:
                self.finishers.append(lambda definitions: _add_encoding(media, definitions))
            return media
        if plan.kind is Kind.MULTIPART:
            return {"schema": {"type": "object", "additionalProperties": dict(_BINARY)}}
        return {"schema": dict(_BINARY)}

    def _entity_content(
        self,
        api: RestApi,
        entities: list[ParameterPlan],
        content: dict[str, Schema],
        consumes: Sequence[str],
    ) -> None:
        """Every format that reads the body into these parameters (of ``consumes``, if any)."""
        schemas = [
            self.schemas.ref(p.adapter, "validation") if p.adapter is not None else {}
            for p in entities
        ]
        schema = schemas[0] if len(schemas) == 1 else {"allOf": schemas}
        accepted = {parse_media_type(mime)[0] for mime in consumes}
        readers = [
            (mime, api.formats.reader(mime))
            for mime in api.formats
            if _reads(api, mime) and (not accepted or mime in accepted)
        ]
        declared = entities[0].declared

        def finish(definitions: dict[str, Schema]) -> None:
            is_object = all(_resolve(s, definitions).get("type") == "object" for s in schemas)
            for mime, reader in readers:
                if isinstance(reader, FormReader):
                    applies = is_object and mime in _FORM_TYPES
                elif isinstance(reader, OctetStreamReader):
                    applies = declared is bytes
                else:  # JSON, and readers the application registered for their types
                    applies = True
                if applies and mime in _FORM_TYPES:
                    content[mime] = {"schema": _form_schema(schema, definitions)}
                elif applies:
                    content[mime] = {"schema": schema}

        self.finishers.append(finish)

    def _responses(
        self, api: RestApi, endpoint: Endpoint, hints: dict[str, Any], has_body: bool
    ) -> dict[str, Schema]:
        declaration = endpoint.declaration
        produces = declaration.produces or api.formats.writable
        errors = api.formats.writable
        responses: dict[int, Schema] = {}

        success: Schema = {"description": _phrase(declaration.status)}
        if declaration.status != 204:
            adapter = _adapter(_returned_type(hints))
            schema = self.schemas.ref(adapter, "serialization") if adapter is not None else None
            success["content"] = {
                m: {"schema": schema} if schema is not None else {} for m in produces
            }
        responses[declaration.status] = success

        # a custom error renderer writes bodies of its own making
        error_media = errors if api.error_renderer is default_error_renderer else ()
        plans = endpoint.plan.parameters
        webrest_errors: list[int] = []
        if any(plan.kind is not Kind.REQUEST for plan in plans) or has_body:
            webrest_errors.append(400)
        if endpoint.template.names:
            webrest_errors.append(404)
        webrest_errors += [405, 406]
        if has_body or endpoint.plan.reads_body:
            webrest_errors += [413, 415]
        for status in webrest_errors:
            responses[status] = self._error(status, error_media)
        responses[500] = {"description": _phrase(500)}

        for status, documented in declaration.responses.items():
            if isinstance(documented, str):
                if status in responses:
                    responses[status] = {**responses[status], "description": documented}
                elif status >= 400:  # what ``Response.error(status, message)`` sends
                    responses[status] = {**self._error(status, errors), "description": documented}
                else:
                    responses[status] = {"description": documented}
            elif documented is None or status == 204:
                responses[status] = {"description": _phrase(status)}
            else:
                adapter = _adapter(documented)
                media = produces if status < 400 else errors
                responses[status] = {
                    "description": _phrase(status),
                    "content": {
                        m: {"schema": self.schemas.ref(adapter, "serialization")} if adapter else {}
                        for m in media
                    },
                }
        return {str(status): responses[status] for status in sorted(responses)}

    def _error(self, status: int, media_types: Iterable[str]) -> Schema:
        response: Schema = {"description": _phrase(status)}
        content = {mime: {"schema": self.error_ref} for mime in media_types}
        if content:
            response["content"] = content
        return response


# -- helpers ---------------------------------------------------------------------------------------


def _openapi_path(base: str, plain: str) -> str:
    """The template's plain path (``/users/{id}``) under the API's base."""
    if plain == "/":
        return base or "/"
    return base + plain


def _pattern(constraint: str | None) -> str:
    """An anchored pattern for a path segment; unconstrained ones cannot contain ``/``."""
    return f"^(?:{constraint})$" if constraint is not None else "^[^/]+$"


def _separator(conversions: Iterable[Conversion]) -> str | None:
    for conversion in conversions:
        if isinstance(conversion, SeparatedBy):
            return conversion.separator
    return None


def _strip_null(schema: Schema) -> None:
    """``T | None`` → ``T`` in place, keeping the other keywords: a query parameter or a
    header cannot be ``null``, only absent."""
    members = schema.get("anyOf")
    if not isinstance(members, list):
        return
    rest = [member for member in members if member != {"type": "null"}]
    if len(rest) == len(members):
        return
    del schema["anyOf"]
    if len(rest) == 1:
        schema.update({**rest[0], **schema})
    else:
        schema["anyOf"] = rest


def _resolve(schema: Schema, definitions: dict[str, Schema]) -> Schema:
    seen = 0
    while "$ref" in schema and seen < 16:
        schema = definitions.get(str(schema["$ref"]).rsplit("/", 1)[-1], {})
        seen += 1
    return schema


def _form_schema(schema: Schema, definitions: dict[str, Schema]) -> Schema:
    """An object schema as a form sends it: a field is absent, never ``null``."""
    resolved = _resolve(schema, definitions)
    properties = resolved.get("properties", {})
    if not any(
        "anyOf" in prop and {"type": "null"} in prop["anyOf"] for prop in properties.values()
    ):
        return schema
    form = {key: value for key, value in resolved.items() if key not in ("properties", "title")}
    form["properties"] = {}
    for name, prop in properties.items():
        form["properties"][name] = prop = dict(prop)
        _strip_null(prop)
        if prop.get("default", 0) is None:
            del prop["default"]
    return form


def _add_encoding(media: Schema, definitions: dict[str, Schema]) -> None:
    """Binary parts of a documented multipart body are sent as files."""
    properties = _resolve(media["schema"], definitions).get("properties", {})
    binary = sorted(name for name, prop in properties.items() if prop.get("format") == "binary")
    if binary:
        media["encoding"] = {name: {"contentType": "application/octet-stream"} for name in binary}


def _reads(api: RestApi, mime: str) -> bool:
    try:
        api.formats.reader(mime)
    except HttpError:  # 415: registered to be written only
        return False
    return True


def _hints(function: Any) -> dict[str, Any]:
    try:
        hints: dict[str, Any] = typing.get_type_hints(function, include_extras=True)
    except Exception:  # unresolvable forward references: document without them
        return {}
    return hints


def _described_by(annotation: Any) -> Any:
    """The documentation type among an ``Annotated`` parameter's metadata, if any."""
    if get_origin(annotation) is not typing.Annotated:
        return None
    for item in get_args(annotation)[1:]:
        if isinstance(item, type) and not issubclass(item, Source):
            return item
    return None


def _returned_type(hints: dict[str, Any]) -> Any:
    """The return annotation when it describes the body, else ``None``."""
    returned = hints.get("return")
    if get_origin(returned) is typing.Annotated:
        returned = get_args(returned)[0]
    if returned is None or returned is type(None):
        return None
    members = get_args(returned) if get_origin(returned) in (typing.Union, types.UnionType) else ()
    for candidate in (returned, *members):
        if isinstance(candidate, type) and issubclass(candidate, (Response, Async)):
            return None
    return returned


def _adapter(annotation: Any) -> TypeAdapter[Any] | None:
    if annotation is None:
        return None
    try:
        return TypeAdapter(annotation)
    except PydanticUserError:
        return None


def _jsonable(value: object) -> object:
    try:
        return to_jsonable_python(value)
    except (PydanticSerializationError, TypeError, ValueError):
        return MISSING


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"Status {status}"
