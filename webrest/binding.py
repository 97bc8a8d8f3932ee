"""Binding plans: how each parameter of a route's method gets its value, computed once.

At registration every parameter is resolved to a source (path, query, header, ...), its
conversions and a pydantic ``TypeAdapter`` for its declared type. Per request, binding is a
loop over prepared extractors: no reflection. All invalid parameters are reported at once.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import AsyncIterable, AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import TypeAdapter, ValidationError
from pydantic.errors import PydanticSchemaGenerationError

from webrest.conversions import Conversion
from webrest.errors import BadRequest, ErrorDetail, HttpError, validation_details
from webrest.formats import Formats, JsonReader
from webrest.multipart import Multipart
from webrest.negotiation import parse_media_type
from webrest.request import Request, decode_text
from webrest.sources import Body, Entity, Header, Matrix, Param, Source, Stream, Value

__all__ = ["MISSING", "Kind", "MethodPlan", "ParameterPlan", "plan_method"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

BODY_VERBS = frozenset({"POST", "PUT", "PATCH"})
_FORM_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data"})
_SEQUENCE_ORIGINS = (list, tuple, set, frozenset, Sequence, typing.Sequence)


class Kind(Enum):
    """The source a parameter is bound from."""

    PATH = "path"
    QUERY = "query"
    HEADER = "header"
    VALUE = "value"
    ENTITY = "body"
    BODY = "text"
    STREAM = "stream"
    MULTIPART = "multipart"
    REQUEST = "request"


_BODY_KINDS = frozenset({Kind.ENTITY, Kind.BODY, Kind.STREAM, Kind.MULTIPART, Kind.REQUEST})


@dataclass(slots=True)
class _Inputs:
    """What one request offers to the extractors."""

    request: Request
    path: dict[str, str]
    entity: object
    form: dict[str, object] | None
    text: str | None


Extractor = Callable[[_Inputs], object]


@dataclass(slots=True)
class ParameterPlan:
    """How one parameter is bound; also what the OpenAPI document describes."""

    name: str
    key: str
    kind: Kind
    declared: Any
    conversions: tuple[Conversion, ...]
    adapter: TypeAdapter[Any] | None
    default: object
    is_list: bool
    extract: Extractor

    @property
    def required(self) -> bool:
        return self.default is MISSING

    @property
    def location(self) -> str:
        return {Kind.ENTITY: "body", Kind.BODY: "body"}.get(self.kind, self.kind.value)


@dataclass(slots=True)
class MethodPlan:
    """The bound parameters of one route's method."""

    parameters: tuple[ParameterPlan, ...]
    reads_entity: bool
    reads_text: bool
    reads_form_params: bool
    reads_body: bool
    formats: Formats
    json_entity: ParameterPlan | None
    consumes: frozenset[str] = frozenset()

    async def bind(self, request: Request, path: dict[str, str]) -> dict[str, object]:
        """The method's arguments for this request; a :class:`BadRequest` lists every problem."""
        entity: object = MISSING
        form: dict[str, object] | None = None
        text: str | None = None
        validated: ParameterPlan | None = None
        errors: list[ErrorDetail] = []
        if self.reads_entity:
            entity, validated = await self._read_entity(request, errors)
        if self.reads_form_params:
            content_type = request.headers.get("content-type")
            if content_type and parse_media_type(content_type)[0] in _FORM_TYPES:
                read = await self.formats.reader(content_type).read(request)
                form = read if isinstance(read, dict) else None
        if self.reads_text:
            text = await _read_text(request)
        inputs = _Inputs(request, path, entity, form, text)

        arguments: dict[str, object] = {}
        conversion_message: str | None = None  # the first failed conversion's, if any
        for parameter in self.parameters:
            if parameter is validated:
                arguments[parameter.name] = entity
                continue
            raw = parameter.extract(inputs)
            if raw is MISSING:
                if parameter.default is MISSING:
                    detail = _missing(parameter)
                    if detail not in errors:  # several parameters may miss the one body
                        errors.append(detail)
                else:
                    arguments[parameter.name] = parameter.default
                continue
            try:
                for conversion in parameter.conversions:
                    raw = conversion.convert(raw)
            except ValueError as exc:
                message = str(exc)
                if conversion_message is None and message:
                    conversion_message = message
                errors.append(
                    ErrorDetail((parameter.location, parameter.key), message, "value_error", raw)
                )
                continue
            if parameter.adapter is None:
                arguments[parameter.name] = raw
                continue
            try:
                arguments[parameter.name] = parameter.adapter.validate_python(raw)
            except ValidationError as exc:
                errors.extend(_details(parameter, exc))
        if errors:
            raise BadRequest(conversion_message or _summary(errors), errors)
        return arguments

    async def _read_entity(
        self, request: Request, errors: list[ErrorDetail]
    ) -> tuple[object, ParameterPlan | None]:
        """The deserialized body, or ``MISSING``; a JSON body bound to a single typed
        parameter is validated straight from bytes, and that parameter is returned too (its
        validation errors are added to ``errors``, to be reported with the others)."""
        headers = request.headers
        content_type = headers.get("content-type")
        if content_type is None and not _has_body(request):
            return MISSING, None
        if self.consumes:
            mime = parse_media_type(content_type)[0] if content_type else "application/json"
            if mime not in self.consumes:
                raise HttpError(415, f"Unsupported request body type {mime}")
        reader = self.formats.reader(content_type)
        fast = self.json_entity
        if fast is not None and isinstance(reader, JsonReader):
            body = await request.body()
            if not body:
                return MISSING, None
            assert fast.adapter is not None
            try:
                value = fast.adapter.validate_json(body)
            except ValidationError as exc:
                if any(error["type"] == "json_invalid" for error in exc.errors()):
                    return reader.parse(body), None  # raises the malformed-JSON error
                errors.extend(_details(fast, exc))
                return MISSING, fast
            reader.check(body)  # the reader's limits (depth, numbers) hold here too
            return value, fast
        value = await reader.read(request)
        if value is None or value == b"":
            return MISSING, None
        return value, None


def _has_body(request: Request) -> bool:
    headers = request.headers
    length = headers.get("content-length")
    if length is not None:
        return length.strip() not in ("", "0")
    return "transfer-encoding" in headers


async def _read_text(request: Request) -> str | None:
    body = await request.body()
    if not body:
        return None
    charset = parse_media_type(request.headers.get("content-type", ""))[1].get("charset", "utf-8")
    try:
        return decode_text(body, charset)
    except (UnicodeDecodeError, LookupError) as exc:
        raise BadRequest(f"The request body is not valid {charset} text") from exc


def _missing(parameter: ParameterPlan) -> ErrorDetail:
    if parameter.kind in (Kind.ENTITY, Kind.BODY):
        return ErrorDetail(("body",), "Field required", "missing", None)
    return ErrorDetail((parameter.location, parameter.key), "Field required", "missing", None)


def _details(parameter: ParameterPlan, exc: ValidationError) -> list[ErrorDetail]:
    prefix: tuple[str | int, ...] = (
        ("body",) if parameter.kind is Kind.ENTITY else (parameter.location, parameter.key)
    )
    return validation_details(exc, prefix)


def _summary(errors: Sequence[ErrorDetail]) -> str:
    parts = []
    for error in errors[:5]:
        where = ".".join(str(item) for item in error.loc[1:]) or error.loc[0]
        if error.type == "missing":
            parts.append(
                "Expecting a request body, none transmitted"
                if error.loc == ("body",)
                else f"Missing argument {where} ({error.loc[0]})"
            )
        else:
            parts.append(f"Invalid argument {where} ({error.loc[0]}): {error.msg}")
    if len(errors) > 5:
        parts.append(f"and {len(errors) - 5} more")
    return "; ".join(parts)


# -- planning ------------------------------------------------------------------------------


def _strip_optional(annotation: Any) -> Any:
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(members) == 1:
            return members[0]
    return annotation


def _is_sequence(annotation: Any) -> bool:
    base = _strip_optional(annotation)
    if get_origin(base) is Annotated:
        base = get_args(base)[0]
    return get_origin(base) in _SEQUENCE_ORIGINS or base in (list, tuple, set, frozenset)


def _is_type(annotation: Any, expected: type) -> bool:
    base = _strip_optional(annotation)
    return isinstance(base, type) and issubclass(base, expected)


def _is_byte_stream(annotation: Any) -> bool:
    return get_origin(_strip_optional(annotation)) in (AsyncIterator, AsyncIterable)


def _adapter(annotation: Any, extras: list[Any], where: str) -> TypeAdapter[Any] | None:
    if annotation in (str, Any, object, inspect.Parameter.empty) and not extras:
        return None
    target: Any = Annotated[(annotation, *extras)] if extras else annotation
    try:
        return TypeAdapter(target)
    except PydanticSchemaGenerationError as exc:
        raise TypeError(f"{where}: cannot convert request values to {annotation!r}") from exc


def _query_extractor(key: str, is_list: bool, unwrap: bool) -> Extractor:
    """``unwrap``: a list parameter given once is passed as its one string (to conversions,
    which split it), given repeatedly or as ``key[]`` as a list."""
    alternatives = (key, f"{key}[]")

    def extract(inputs: _Inputs) -> object:
        query = inputs.request.query_params
        for name in alternatives:
            if name in query:
                if not is_list:
                    return query[name]
                values = query.getlist(name)
                return values[0] if unwrap and len(values) == 1 and name == key else values
        if inputs.form is not None and key in inputs.form:
            value = inputs.form[key]
            if is_list and not isinstance(value, list):
                return value if unwrap else [value]
            return value
        return MISSING

    return extract


def _header_extractor(key: str, is_list: bool, unwrap: bool) -> Extractor:
    lowered = key.lower()

    def extract(inputs: _Inputs) -> object:
        headers = inputs.request.headers
        if lowered not in headers:
            return MISSING
        if not is_list:
            return headers[lowered]
        values = headers.getlist(lowered)
        return values[0] if unwrap and len(values) == 1 else values

    return extract


def _path_extractor(key: str) -> Extractor:
    def extract(inputs: _Inputs) -> object:
        return inputs.path.get(key, MISSING)

    return extract


def _value_extractor(key: str) -> Extractor:
    def extract(inputs: _Inputs) -> object:
        return inputs.request.passed.get(key, MISSING)

    return extract


def _select_source(metadata: Sequence[Any]) -> tuple[Source | None, list[Conversion], list[Any]]:
    source: Source | None = None
    conversions: list[Conversion] = []
    extras: list[Any] = []
    for item in metadata:
        if isinstance(item, type) and issubclass(item, Source):
            item = item()
        if item is Request:
            item = _REQUEST_MARKER
        if isinstance(item, Matrix):
            conversions.append(item)
            if source is None:
                source = item
        elif isinstance(item, Source):
            if source is None or isinstance(source, Matrix):
                source = item
        elif isinstance(item, Conversion) and not isinstance(item, type):
            conversions.append(item)
        else:
            extras.append(item)
    return source, conversions, extras


class _RequestMarker(Source):
    __slots__ = ()


_REQUEST_MARKER = _RequestMarker()


def plan_method(
    function: Callable[..., Any],
    verb: str,
    path_names: Sequence[str],
    formats: Formats,
    consumes: Sequence[str] = (),
) -> MethodPlan:
    """Resolve every parameter of ``function`` (bound method) for a ``verb`` route whose path
    captures ``path_names``; raises ``TypeError`` for a parameter that cannot be bound."""
    where = getattr(function, "__qualname__", repr(function))
    hints = typing.get_type_hints(function, include_extras=True)
    default_kind = Kind.ENTITY if verb in BODY_VERBS else Kind.QUERY
    plans: list[ParameterPlan] = []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{where}: *args and **kwargs cannot be bound to a request")
        annotation = hints.get(parameter.name, Any)
        metadata: tuple[Any, ...] = ()
        if get_origin(annotation) is Annotated:
            annotation, *rest = get_args(annotation)
            metadata = tuple(rest)
        source, conversions, extras = _select_source(metadata)
        key = (source.name if source is not None else None) or parameter.name
        default = MISSING if parameter.default is parameter.empty else parameter.default
        if default is MISSING and _strip_optional(annotation) is not annotation:
            default = None  # ``T | None`` without a default is optional too
        is_list = _is_sequence(annotation)
        adapter_needed = True

        kind: Kind
        if isinstance(source, _RequestMarker) or (source is None and _is_type(annotation, Request)):
            kind, adapter_needed = Kind.REQUEST, False
        elif _is_type(annotation, Multipart) and (source is None or isinstance(source, Stream)):
            kind, adapter_needed = Kind.MULTIPART, False
        elif isinstance(source, Stream) or (source is None and _is_byte_stream(annotation)):
            kind, adapter_needed = Kind.STREAM, False
        elif isinstance(source, Value):
            kind, adapter_needed = Kind.VALUE, False
        elif isinstance(source, Header):
            kind = Kind.HEADER
            if source.name is None:
                key = parameter.name.replace("_", "-")
        elif isinstance(source, Entity):
            kind = Kind.ENTITY
        elif isinstance(source, Body):
            kind = Kind.BODY
        elif key in path_names:
            kind = Kind.PATH
        elif isinstance(source, (Param, Matrix)):
            kind = Kind.PATH if isinstance(source, Matrix) and key in path_names else Kind.QUERY
        else:
            kind = default_kind

        if kind is Kind.PATH:
            is_list = False
        # conversions get the raw string of a list parameter given once (rule 5)
        extract = _extractor(kind, key, is_list, bool(conversions))
        adapter = (
            _adapter(annotation, extras, f"{where}({parameter.name})") if adapter_needed else None
        )
        if kind is Kind.BODY and annotation in (str, Any, inspect.Parameter.empty) and not extras:
            adapter = None
        plans.append(
            ParameterPlan(
                name=parameter.name,
                key=key,
                kind=kind,
                declared=annotation,
                conversions=tuple(conversions),
                adapter=adapter,
                default=default,
                is_list=is_list,
                extract=extract,
            )
        )
    entities = [p for p in plans if p.kind is Kind.ENTITY]
    reads_form_params = verb in BODY_VERBS and any(p.kind is Kind.QUERY for p in plans)
    return MethodPlan(
        parameters=tuple(plans),
        reads_entity=bool(entities),
        reads_text=any(p.kind is Kind.BODY for p in plans),
        reads_form_params=reads_form_params,
        reads_body=reads_form_params or any(p.kind in _BODY_KINDS for p in plans),
        formats=formats,
        json_entity=(
            entities[0]
            if len(entities) == 1
            and entities[0].adapter is not None
            and not entities[0].conversions
            else None
        ),
        consumes=frozenset(parse_media_type(mime)[0] for mime in consumes),
    )


def _extractor(kind: Kind, key: str, is_list: bool, unwrap: bool) -> Extractor:
    if kind is Kind.PATH:
        return _path_extractor(key)
    if kind is Kind.QUERY:
        return _query_extractor(key, is_list, unwrap)
    if kind is Kind.HEADER:
        return _header_extractor(key, is_list, unwrap)
    if kind is Kind.VALUE:
        return _value_extractor(key)
    if kind is Kind.ENTITY:
        return lambda inputs: inputs.entity
    if kind is Kind.BODY:
        return lambda inputs: MISSING if inputs.text is None else inputs.text
    if kind is Kind.STREAM:
        return lambda inputs: inputs.request.stream()
    if kind is Kind.MULTIPART:
        return lambda inputs: Multipart.from_request(inputs.request)
    return lambda inputs: inputs.request
