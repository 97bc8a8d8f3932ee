"""Every ``specs/*.openapi.yaml`` follows the conventions of ``specs/README.md``.

The generator, the mock server and the contract fuzzers rely on them, so each check names the
spec, the operation and the field that breaks a convention.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema.exceptions import ValidationError as SchemaValidationError
from openapi_schema_validator import (
    OAS30ReadValidator,
    OAS30WriteValidator,
    oas30_format_checker,
)
from openapi_spec_validator import validate as validate_openapi

SPECS_DIR = Path(__file__).resolve().parents[2] / "specs"
SPEC_FILES = sorted(SPECS_DIR.glob("*.openapi.yaml"))

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
ERROR_STYLES = ("fastapi-422", "envelope", "plain-text")
SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
CLIENT_METHOD = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*")
PACKAGE = re.compile(r"[a-z][a-z0-9_]*")
CLASS_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")
PRIMITIVE_TYPES = ("string", "integer", "number", "boolean")
# Formats whose values are bounded by the format itself, or are files (streamed, limited by size).
BOUNDED_STRING_FORMATS = ("binary", "uuid", "date", "date-time")
STREAM_MEDIA_TYPES = ("text/plain", "text/event-stream", "application/octet-stream")

Problems = list[str]


@cache
def load(spec: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(spec.read_text(encoding="utf-8"))
    return document


def resolve(document: dict[str, Any], node: Any) -> Any:
    """Follow local ``$ref``s until a node without one."""
    seen: set[str] = set()
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert isinstance(ref, str) and ref.startswith("#/"), f"non-local $ref {ref!r}"
        assert ref not in seen, f"$ref cycle at {ref}"
        seen.add(ref)
        target: Any = document
        for part in ref[2:].split("/"):
            key = part.replace("~1", "/").replace("~0", "~")
            assert isinstance(target, dict) and key in target, f"dangling $ref {ref}"
            target = target[key]
        node = target
    return node


def operations(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``(label, operation, path item)`` for every operation; label is ``METHOD /path``."""
    for route, item in (document.get("paths") or {}).items():
        item = resolve(document, item)
        for method in METHODS:
            if method in item:
                yield f"{method.upper()} {route}", item[method], item


def responses(
    document: dict[str, Any], operation: dict[str, Any]
) -> Iterator[tuple[str, dict[str, Any]]]:
    for status, response in (operation.get("responses") or {}).items():
        yield str(status), resolve(document, response)


def is_success(status: str) -> bool:
    return status.startswith("2")


def is_error(status: str) -> bool:
    return status == "default" or status[:1] in ("4", "5")


def is_json(media_type: str) -> bool:
    essence = media_type.split(";", 1)[0].strip().lower()
    return essence == "application/json" or essence.endswith("+json")


def codegen(document: dict[str, Any]) -> dict[str, Any]:
    meta = document.get("x-codegen")
    return meta if isinstance(meta, dict) else {}


def schema_ref(schema: Any) -> str | None:
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        return str(schema["$ref"])
    return None


def fail_if(problems: Problems, spec: Path) -> None:
    if problems:
        pytest.fail(f"{spec.name}:\n  " + "\n  ".join(problems), pytrace=False)


specs = pytest.mark.parametrize("spec", SPEC_FILES, ids=[p.name for p in SPEC_FILES])


# -- document level ------------------------------------------------------------------------------


@specs
def test_is_a_valid_openapi_30_document(spec: Path) -> None:
    document = load(spec)
    version = str(document.get("openapi", ""))
    assert re.fullmatch(r"3\.0\.\d+", version), (
        f"{spec.name}: openapi must be 3.0.x, is {version!r}"
    )
    validate_openapi(document)


@specs
def test_x_codegen_names_package_client_and_error_shape(spec: Path) -> None:
    document = load(spec)
    problems: Problems = []
    meta = document.get("x-codegen")
    if not isinstance(meta, dict):
        pytest.fail(f"{spec.name}: missing top-level x-codegen", pytrace=False)
    package, client, style = meta.get("package"), meta.get("client"), meta.get("error-style")
    if not isinstance(package, str) or not PACKAGE.fullmatch(package):
        problems.append(f"x-codegen.package must be a Python package name, is {package!r}")
    if not isinstance(client, str) or not CLASS_NAME.fullmatch(client):
        problems.append(f"x-codegen.client must be a CamelCase class name, is {client!r}")
    if style not in ERROR_STYLES:
        problems.append(f"x-codegen.error-style must be one of {ERROR_STYLES}, is {style!r}")
    error_schema = meta.get("error-schema")
    if style == "plain-text":
        if error_schema is not None:
            problems.append("x-codegen.error-schema is not used with error-style plain-text")
    elif style in ERROR_STYLES:
        schemas = (document.get("components") or {}).get("schemas") or {}
        if not isinstance(error_schema, str):
            problems.append(f"x-codegen.error-schema is required with error-style {style}")
        elif error_schema not in schemas:
            problems.append(f"x-codegen.error-schema {error_schema!r} is not in components/schemas")
    fail_if(problems, spec)


def test_generated_packages_are_distinct() -> None:
    owners: dict[str, str] = {}
    for spec in SPEC_FILES:
        package = codegen(load(spec)).get("package")
        if isinstance(package, str):
            assert package not in owners, (
                f"{spec.name} and {owners[package]} both generate package {package!r}"
            )
            owners[package] = spec.name


@specs
def test_paths_are_complete(spec: Path) -> None:
    """Servers carry no path prefix: the paths in the spec are the paths on the wire."""
    problems: Problems = []
    for server in load(spec).get("servers") or []:
        url = str(server.get("url", ""))
        path = re.sub(r"^[a-z][a-z0-9+.-]*://[^/]*", "", url, flags=re.IGNORECASE)
        if path not in ("", "/"):
            problems.append(f"servers url {url!r} has a path prefix; put it in the paths")
    fail_if(problems, spec)


# -- operations ----------------------------------------------------------------------------------


@specs
def test_operations_have_unique_names_summary_and_tags(spec: Path) -> None:
    document = load(spec)
    problems: Problems = []
    operation_ids: dict[str, str] = {}
    client_methods: dict[str, str] = {}
    for label, operation, _ in operations(document):
        operation_id = operation.get("operationId")
        if not isinstance(operation_id, str) or not SNAKE_CASE.fullmatch(operation_id):
            problems.append(f"{label}: operationId must be snake_case, is {operation_id!r}")
        elif operation_id in operation_ids:
            other = operation_ids[operation_id]
            problems.append(f"{label}: operationId {operation_id!r} is also used by {other}")
        else:
            operation_ids[operation_id] = label
        client_method = operation.get("x-client-method")
        if not isinstance(client_method, str) or not CLIENT_METHOD.fullmatch(client_method):
            problems.append(
                f"{label}: x-client-method must be dotted snake_case, is {client_method!r}"
            )
        elif client_method in client_methods:
            problems.append(
                f"{label}: x-client-method {client_method!r} is also used by "
                f"{client_methods[client_method]}"
            )
        else:
            client_methods[client_method] = label
        if not str(operation.get("summary") or "").strip():
            problems.append(f"{label}: missing summary")
        tags = operation.get("tags")
        if not isinstance(tags, list) or not tags:
            problems.append(f"{label}: missing tags")
    if not operation_ids and not problems:
        problems.append("the spec has no operations")
    fail_if(problems, spec)


@specs
def test_operations_have_a_success_response(spec: Path) -> None:
    document = load(spec)
    problems = [
        f"{label}: no 2xx response"
        for label, operation, _ in operations(document)
        if not any(is_success(status) for status, _ in responses(document, operation))
    ]
    fail_if(problems, spec)


@specs
def test_error_responses_use_the_error_shape(spec: Path) -> None:
    """4xx, 5xx and default responses carry the API's error schema (plain-text: text/plain)."""
    document = load(spec)
    meta = codegen(document)
    style = meta.get("error-style")
    error_schema = meta.get("error-schema") or "(x-codegen.error-schema is missing)"
    expected = f"#/components/schemas/{error_schema}"
    problems: Problems = []
    for label, operation, _ in operations(document):
        success_refs = {
            schema_ref(media.get("schema"))
            for status, response in responses(document, operation)
            if is_success(status)
            for media in (response.get("content") or {}).values()
        } - {None}
        for status, response in responses(document, operation):
            if not is_error(status):
                continue
            where = f"{label}: response {status}"
            content: dict[str, Any] = response.get("content") or {}
            if style == "plain-text":
                # Plain text errors; an empty body; or, as the upstream's 429, the same body as
                # a success response with another status.
                for media_type, media in content.items():
                    ref = schema_ref(media.get("schema"))
                    if media_type.split(";")[0].strip() != "text/plain" and (
                        ref is None or ref not in success_refs
                    ):
                        problems.append(
                            f"{where}: {media_type} must be text/plain (or a success schema)"
                        )
                continue
            if not content:
                problems.append(f"{where}: no body; errors carry {expected}")
            for media_type, media in content.items():
                ref = schema_ref(media.get("schema"))
                # A readiness answer (503) may carry the success body; fastapi-422 APIs answer
                # errors that are not about input ({"detail": "Not Found"}) in FastAPI's
                # HTTPException shape, named by x-codegen.message-error-schema.
                allowed = {expected, *success_refs}
                if meta.get("message-error-schema"):
                    allowed.add(f"#/components/schemas/{meta['message-error-schema']}")
                if not is_json(media_type) or ref not in allowed:
                    problems.append(
                        f"{where}: {media_type} with schema {ref or media.get('schema')!r}; "
                        f"errors are JSON with $ref {expected}"
                    )
    fail_if(problems, spec)


@specs
def test_bodies_and_responses_reference_component_schemas(spec: Path) -> None:
    """Object bodies are named models: ``$ref`` (or an array of ``$ref``), never inline."""
    document = load(spec)
    problems: Problems = []
    for label, operation, _ in operations(document):
        body = resolve(document, operation.get("requestBody") or {})
        media_types = [("request body", t, m) for t, m in (body.get("content") or {}).items()]
        for status, response in responses(document, operation):
            for media_type, media in (response.get("content") or {}).items():
                media_types.append((f"response {status}", media_type, media))
        for where, media_type, media in media_types:
            schema = media.get("schema")
            if schema is None or schema_ref(schema):
                continue
            if schema.get("type") == "array":
                items = schema.get("items") or {}
                if schema_ref(items) or items.get("type") in PRIMITIVE_TYPES:
                    continue
                problems.append(f"{label}: {where} {media_type}: array items must be a $ref")
            elif schema.get("type") not in PRIMITIVE_TYPES or "properties" in schema:
                problems.append(
                    f"{label}: {where} {media_type}: inline schema; define it in "
                    "components/schemas and use $ref"
                )
    fail_if(problems, spec)


# -- examples ------------------------------------------------------------------------------------


def media_examples(document: dict[str, Any], media: dict[str, Any]) -> list[tuple[str, Any]]:
    """The examples given on a media type (or parameter): ``example`` and ``examples``."""
    found: list[tuple[str, Any]] = []
    if "example" in media:
        found.append(("example", media["example"]))
    for name, example in (media.get("examples") or {}).items():
        example = resolve(document, example)
        if "value" in example:
            found.append((f"examples.{name}", example["value"]))
    return found


def has_schema_example(document: dict[str, Any], schema: Any) -> bool:
    resolved = resolve(document, schema or {})
    if "example" in resolved:
        return True
    if resolved.get("type") == "array":
        return "example" in resolve(document, resolved.get("items") or {})
    return False


@specs
def test_request_bodies_and_success_responses_have_examples(spec: Path) -> None:
    document = load(spec)
    problems: Problems = []
    for label, operation, _ in operations(document):
        body = resolve(document, operation.get("requestBody") or {})
        targets = [("request body", t, m) for t, m in (body.get("content") or {}).items()]
        for status, response in responses(document, operation):
            if is_success(status):
                for media_type, media in (response.get("content") or {}).items():
                    targets.append((f"response {status}", media_type, media))
        for where, media_type, media in targets:
            if not media_examples(document, media) and not has_schema_example(
                document, media.get("schema")
            ):
                problems.append(f"{label}: {where} {media_type}: no example")
    fail_if(problems, spec)


def schema_examples(node: Any, where: str) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """``(location, schema, example)`` for every ``example`` inside a schema tree (no $refs)."""
    if not isinstance(node, dict) or "$ref" in node:
        return
    if "example" in node:
        yield f"{where}.example", node, node["example"]
    for name, child in (node.get("properties") or {}).items():
        yield from schema_examples(child, f"{where}.{name}")
    for keyword in ("items", "additionalProperties", "not"):
        yield from schema_examples(node.get(keyword), f"{where}.{keyword}")
    for keyword in ("allOf", "anyOf", "oneOf"):
        for index, child in enumerate(node.get(keyword) or []):
            yield from schema_examples(child, f"{where}.{keyword}[{index}]")


def example_error(
    document: dict[str, Any], schema: Any, example: Any, *, request: bool
) -> str | None:
    """Why ``example`` does not match ``schema`` (OpenAPI 3.0 semantics), or None."""
    wrapper = {"allOf": [schema], "components": document.get("components") or {}}
    validator_class = OAS30WriteValidator if request else OAS30ReadValidator
    validator = validator_class(wrapper, format_checker=oas30_format_checker)
    errors = sorted(validator.iter_errors(example), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    first: SchemaValidationError = errors[0]
    at = "/".join(str(p) for p in first.absolute_path) or "(root)"
    return f"at {at}: {first.message}"


@specs
def test_examples_match_their_schemas(spec: Path) -> None:
    document = load(spec)
    problems: Problems = []

    def check(where: str, schema: Any, example: Any, *, request: bool) -> None:
        error = example_error(document, schema, example, request=request)
        if error:
            problems.append(f"{where} does not match its schema {error}")

    for label, operation, item in operations(document):
        for parameter in [*(item.get("parameters") or []), *(operation.get("parameters") or [])]:
            parameter = resolve(document, parameter)
            for name, example in media_examples(document, parameter):
                where = f"{label}: parameter {parameter.get('name')} {name}"
                check(where, parameter.get("schema") or {}, example, request=True)
        body = resolve(document, operation.get("requestBody") or {})
        for media_type, media in (body.get("content") or {}).items():
            for name, example in media_examples(document, media):
                where = f"{label}: request body {media_type} {name}"
                check(where, media.get("schema") or {}, example, request=True)
        for status, response in responses(document, operation):
            for media_type, media in (response.get("content") or {}).items():
                for name, example in media_examples(document, media):
                    where = f"{label}: response {status} {media_type} {name}"
                    check(where, media.get("schema") or {}, example, request=False)
    for name, schema in ((document.get("components") or {}).get("schemas") or {}).items():
        for where, subschema, example in schema_examples(schema, f"components.schemas.{name}"):
            check(where, subschema, example, request=False)
    fail_if(problems, spec)


# -- request schemas and parameters --------------------------------------------------------------


def pattern_bounds_length(pattern: str) -> bool:
    """An anchored pattern without unbounded repetition (``*``, ``+``, ``{n,}``)."""
    body = re.sub(r"\\.", "x", pattern)
    body = re.sub(r"\[[^\]]*\]", "x", body)
    anchored = body.startswith("^") and body.endswith("$")
    return anchored and not re.search(r"[*+]|\{\d+,\}", body)


def bound_problems(schema: dict[str, Any], where: str) -> Problems:
    """Strings, integers and arrays of input must be bounded."""
    if "enum" in schema:
        return []
    kind = schema.get("type")
    if kind == "string":
        bounded = (
            "maxLength" in schema
            or schema.get("format") in BOUNDED_STRING_FORMATS
            or pattern_bounds_length(str(schema.get("pattern", "")))
        )
        return [] if bounded else [f"{where}: string without maxLength"]
    if kind == "integer":
        missing = [key for key in ("minimum", "maximum") if key not in schema]
        return [f"{where}: integer without {' and '.join(missing)}"] if missing else []
    if kind == "array" and "maxItems" not in schema:
        return [f"{where}: array without maxItems"]
    return []


def request_schema_problems(
    document: dict[str, Any], schema: Any, where: str, seen: set[str]
) -> Problems:
    """Walk an input schema (following $refs once each) for strictness and bounds."""
    if not isinstance(schema, dict):
        return []
    ref = schema_ref(schema)
    if ref is not None:
        if ref in seen:
            return []
        seen.add(ref)
        return request_schema_problems(
            document, resolve(document, schema), ref.rsplit("/", 1)[-1], seen
        )
    problems = bound_problems(schema, where)
    properties: dict[str, Any] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    binary_files = isinstance(extra, dict) and extra.get("format") == "binary"
    if properties and extra is not False and not binary_files:
        problems.append(
            f"{where}: object with properties needs additionalProperties: false"
            " (or a binary file schema, for multipart file inputs)"
        )
    for name, child in properties.items():
        problems += request_schema_problems(document, child, f"{where}.{name}", seen)
    if isinstance(schema.get("items"), dict):
        problems += request_schema_problems(document, schema["items"], f"{where}[]", seen)
    if isinstance(schema.get("additionalProperties"), dict):
        problems += request_schema_problems(
            document, schema["additionalProperties"], f"{where}{{*}}", seen
        )
    for keyword in ("allOf", "anyOf", "oneOf"):
        for index, child in enumerate(schema.get(keyword) or []):
            problems += request_schema_problems(
                document, child, f"{where}.{keyword}[{index}]", seen
            )
    return problems


@specs
def test_request_bodies_are_strict_and_bounded(spec: Path) -> None:
    """additionalProperties: false on objects; maxLength, minimum/maximum, maxItems on values."""
    document = load(spec)
    problems: Problems = []
    for label, operation, _ in operations(document):
        body = resolve(document, operation.get("requestBody") or {})
        for media_type, media in (body.get("content") or {}).items():
            schema = media.get("schema") or {}
            if media_type in STREAM_MEDIA_TYPES:
                continue
            found = request_schema_problems(document, schema, "body", set())
            problems += [f"{label}: request body {media_type}: {p}" for p in found]
    fail_if(problems, spec)


@specs
def test_parameters_are_inline_bounded_primitives(spec: Path) -> None:
    document = load(spec)
    problems: Problems = []
    for label, operation, item in operations(document):
        for parameter in [*(item.get("parameters") or []), *(operation.get("parameters") or [])]:
            parameter = resolve(document, parameter)
            where = f"{label}: {parameter.get('in')} parameter {parameter.get('name')}"
            schema = parameter.get("schema")
            if not isinstance(schema, dict) or schema_ref(schema):
                problems.append(f"{where}: needs an inline schema")
                continue
            kind = schema.get("type")
            if kind == "array":
                items = schema.get("items") or {}
                if schema_ref(items) or items.get("type") not in PRIMITIVE_TYPES:
                    problems.append(f"{where}: array items must be an inline primitive type")
                else:
                    problems += bound_problems(items, f"{where} items")
            elif kind not in PRIMITIVE_TYPES:
                problems.append(f"{where}: type must be primitive or an array, is {kind!r}")
            problems += bound_problems(schema, where)
    fail_if(problems, spec)
