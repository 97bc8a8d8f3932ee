"""Reading an OpenAPI document into what the generator needs: its operations, their
parameters, bodies and responses, already resolved and named for Python."""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "Api",
    "BodyVariant",
    "Operation",
    "Parameter",
    "ResponseSpec",
    "load_api",
    "python_name",
]

JSON = "application/json"
MULTIPART = "multipart/form-data"
STREAM_TYPES = ("text/plain", "text/event-stream", "application/octet-stream")
METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
ERROR_STYLES = ("fastapi-422", "envelope", "plain-text")


def python_name(name: str) -> str:
    """``agentId`` → ``agent_id``, ``_json`` → ``json_``, ``from`` → ``from_``."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    snake = re.sub(r"[^a-z0-9_]", "_", snake).strip("_") or "value"
    if snake[0].isdigit():
        snake = "_" + snake
    if name.startswith("_") or keyword.iskeyword(snake) or snake in {"self", "body", "files"}:
        snake += "_"
    return snake


@dataclass(frozen=True)
class Parameter:
    """A path, query or header parameter."""

    name: str
    location: str
    schema: dict[str, Any]
    required: bool
    description: str = ""
    explode: bool = True

    @property
    def py_name(self) -> str:
        return python_name(self.name)

    @property
    def comma_separated(self) -> bool:
        return self.schema.get("type") == "array" and not self.explode


@dataclass(frozen=True)
class BodyVariant:
    """One content type of a request body: a named JSON model, or a multipart form."""

    content_type: str
    schema_name: str | None
    schema: dict[str, Any]

    @property
    def is_json(self) -> bool:
        return self.content_type == JSON

    @property
    def is_multipart(self) -> bool:
        return self.content_type == MULTIPART


@dataclass(frozen=True)
class ResponseSpec:
    """One documented status: its content types and, for JSON, the named model."""

    status: int
    content_types: tuple[str, ...]
    schema_name: str | None
    schema: dict[str, Any]
    is_array: bool = False
    item_schema_name: str | None = None

    @property
    def binary_alternative(self) -> bool:
        """JSON or a file, by what is asked (a file listing, or the one file)."""
        return JSON in self.content_types and any(
            t not in (JSON,) and not t.startswith("text/") for t in self.content_types
        )

    @property
    def streamed(self) -> bool:
        return any(t in STREAM_TYPES for t in self.content_types) and JSON not in self.content_types


@dataclass
class Operation:
    """An operation with everything resolved."""

    operation_id: str
    method: str
    path: str
    client_method: str
    summary: str
    description: str
    parameters: list[Parameter]
    bodies: list[BodyVariant]
    body_required: bool
    responses: list[ResponseSpec]
    raw_body: bool = False  # x-codegen-raw-body: the handler parses the body (bytes) itself
    client_methods_by_type: dict[str, str] = field(default_factory=dict)

    @property
    def success(self) -> ResponseSpec:
        return next(r for r in self.responses if 200 <= r.status < 300)

    @property
    def answers(self) -> tuple[int, ...]:
        """Error statuses whose body is the success body (the rate limit decision's 429, a
        readiness 503): clients return that body instead of raising."""
        success = self.success
        if success.schema_name is None:
            return ()
        return tuple(
            r.status
            for r in self.responses
            if r.status >= 400
            and r.schema_name == success.schema_name
            and r.is_array == success.is_array
        )

    @property
    def json_body(self) -> BodyVariant | None:
        return next((b for b in self.bodies if b.is_json), None)

    @property
    def multipart_body(self) -> BodyVariant | None:
        return next((b for b in self.bodies if b.is_multipart), None)

    @property
    def path_parameters(self) -> list[Parameter]:
        return [p for p in self.parameters if p.location == "path"]


@dataclass
class Api:
    """A whole spec."""

    path: Path
    document: dict[str, Any]
    package: str
    client: str
    error_style: str
    error_schema: str | None
    title: str
    version: str
    operations: list[Operation]
    security_bearer: bool

    @property
    def schemas(self) -> dict[str, Any]:
        schemas: dict[str, Any] = self.document.get("components", {}).get("schemas", {})
        return schemas


def _resolve(document: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        ref: str = node["$ref"]
        if not ref.startswith("#/"):
            raise ValueError(f"Only local references are supported: {ref}")
        target: Any = document
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def _ref_name(node: Any) -> str | None:
    if isinstance(node, dict) and "$ref" in node:
        ref: str = node["$ref"]
        if ref.startswith("#/components/schemas/"):
            return ref.rsplit("/", 1)[1]
    return None


def load_api(path: Path) -> Api:
    """Read and check one ``*.openapi.yaml``; errors name the spec and the operation."""
    document: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    meta = document.get("x-codegen")
    if not isinstance(meta, dict):
        raise ValueError(f"{path.name}: missing top-level x-codegen")
    style = meta.get("error-style")
    if style not in ERROR_STYLES:
        raise ValueError(f"{path.name}: x-codegen.error-style must be one of {ERROR_STYLES}")
    operations: list[Operation] = []
    for route, item in document.get("paths", {}).items():
        shared = item.get("parameters", [])
        for method in METHODS:
            if method in item:
                operations.append(
                    _operation(document, path.name, route, method, item[method], shared)
                )
    seen: set[str] = set()
    for operation in operations:
        if operation.operation_id in seen:
            raise ValueError(f"{path.name}: operationId {operation.operation_id} is used twice")
        seen.add(operation.operation_id)
    security = document.get("components", {}).get("securitySchemes", {})
    return Api(
        path=path,
        document=document,
        package=meta["package"],
        client=meta["client"],
        error_style=style,
        error_schema=meta.get("error-schema"),
        title=document["info"]["title"],
        version=str(document["info"]["version"]),
        operations=operations,
        security_bearer=any(s.get("scheme") == "bearer" for s in security.values()),
    )


def _operation(
    document: dict[str, Any],
    spec: str,
    route: str,
    method: str,
    raw: dict[str, Any],
    shared: list[Any],
) -> Operation:
    where = f"{spec}: {method.upper()} {route}"
    operation_id = raw.get("operationId")
    if not operation_id or not re.fullmatch(r"[a-z][a-z0-9_]*", operation_id):
        raise ValueError(f"{where}: operationId must be snake_case")
    client_method = raw.get("x-client-method")
    if not client_method:
        raise ValueError(f"{where}: missing x-client-method")
    parameters = [
        _parameter(document, p)
        for p in [*shared, *raw.get("parameters", [])]
        if _resolve(document, p).get("in") in ("path", "query", "header")
    ]
    bodies: list[BodyVariant] = []
    body_required = False
    raw_body = False
    if "requestBody" in raw:
        request_body = _resolve(document, raw["requestBody"])
        body_required = bool(request_body.get("required", False))
        raw_body = bool(request_body.get("x-codegen-raw-body", False))
        for content_type, media in request_body.get("content", {}).items():
            schema = media.get("schema", {})
            bodies.append(BodyVariant(content_type, _ref_name(schema), _resolve(document, schema)))
    responses: list[ResponseSpec] = []
    for status, response in raw.get("responses", {}).items():
        if status == "default":
            continue
        response = _resolve(document, response)
        content = response.get("content", {})
        json_schema = content.get(JSON, {}).get("schema", {})
        resolved = _resolve(document, json_schema) if json_schema else {}
        items = resolved.get("items") if resolved.get("type") == "array" else None
        responses.append(
            ResponseSpec(
                status=int(status),
                content_types=tuple(content),
                schema_name=_ref_name(json_schema),
                schema=resolved,
                is_array=items is not None,
                item_schema_name=_ref_name(items) if items is not None else None,
            )
        )
    responses.sort(key=lambda r: r.status)
    if not any(200 <= r.status < 300 for r in responses):
        raise ValueError(f"{where}: no 2xx response")
    return Operation(
        operation_id=operation_id,
        method=method.upper(),
        path=route,
        client_method=client_method,
        summary=raw.get("summary", ""),
        description=raw.get("description", ""),
        parameters=parameters,
        bodies=bodies,
        body_required=body_required,
        responses=responses,
        raw_body=raw_body,
        client_methods_by_type=dict(raw.get("x-client-method-by-content-type", {})),
    )


def _parameter(document: dict[str, Any], raw: Any) -> Parameter:
    resolved = _resolve(document, raw)
    location = resolved["in"]
    schema = _resolve(document, resolved.get("schema", {"type": "string"}))
    if isinstance(schema.get("items"), dict):
        schema = {**schema, "items": _resolve(document, schema["items"])}
    style_default_explode = location in ("query", "cookie")
    return Parameter(
        name=resolved["name"],
        location=location,
        schema=schema,
        required=bool(resolved.get("required", location == "path")),
        description=resolved.get("description", ""),
        explode=bool(resolved.get("explode", style_default_explode)),
    )
