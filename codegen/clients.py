"""The client view of each operation: method names, arguments, request building."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from codegen.spec import Api, Operation, _ref_name, python_name
from codegen.types import annotation, model_ref, success_type

__all__ = ["OPTIONS", "ClientMethod", "Namespace", "Page", "client_tree"]

OPTIONS = (
    "timeout: float | httpx.Timeout | None = None",
    "max_retries: int | None = None",
)
"""The per-call options every client method takes after its own keywords (the client's
``timeout_seconds`` and ``RetryPolicy`` when ``None``)."""
_OPTION_NAMES = frozenset(option.split(":", 1)[0] for option in OPTIONS)
PAGE_SIZE_WITHOUT_MAXIMUM = 100
"""The page size of an iterator whose ``limit`` parameter has no ``maximum``."""


@dataclass(frozen=True)
class Page:
    """How a paged list operation pages (see ``paging``): the response's array of items
    (its Python field name), the items' annotation, the default page size and whether the
    response counts every match in ``total``."""

    items: str
    item_type: str
    page_size: int
    total: bool


@dataclass
class ClientMethod:
    name: str
    dotted: str
    operation: Operation
    build: str  # name of the module-level request builder
    parse: str  # name of the module-level response parser
    signature: list[str]
    call: str
    returns: str
    streamed: bool
    content_type: str | None  # the body content type this method sends (None: no body)
    json_field: str | None = None
    path_expression: str = ""
    query: list[tuple[str, str, bool]] = field(default_factory=list)
    header: list[tuple[str, str, bool]] = field(default_factory=list)
    form: list[tuple[str, str, bool, bool]] = field(default_factory=list)
    extra_files: bool = False
    accept: bool = False
    page: Page | None = None
    call_keywords: list[str] = field(default_factory=list)  # the keyword arguments' names

    @property
    def public_signature(self) -> list[str]:
        """The client method's arguments: the operation's, then the per-call options."""
        star = [] if "*" in self.signature else ["*"]
        return [*self.signature, *star, *OPTIONS]

    @property
    def path_arguments(self) -> list[str]:
        """The positional arguments (path parameters, a body) as the method names them."""
        positional = []
        for item in self.signature:
            if item == "*":
                break
            positional.append(item.split(":", 1)[0])
        return positional


@dataclass
class Namespace:
    name: str
    class_name: str
    methods: list[ClientMethod] = field(default_factory=list)
    children: list[Namespace] = field(default_factory=list)


def _methods(operation: Operation, models: dict[str, str]) -> list[ClientMethod]:
    """One client method, or one per body content type when the spec names one for each."""
    success = success_type(operation, models)
    returns, streamed = success.annotation, success.streamed
    if operation.success.binary_alternative and not streamed:
        returns = f"{returns} | bytes"  # the JSON listing, or a file's bytes
    variants: list[tuple[str, str | None]] = []
    if operation.client_methods_by_type:
        variants = [(name, ctype) for ctype, name in operation.client_methods_by_type.items()]
    else:
        json_body = operation.json_body
        default_type = (
            json_body.content_type
            if json_body
            else (operation.bodies[0].content_type if operation.bodies else None)
        )
        variants = [(operation.client_method, default_type)]
    methods = []
    for dotted, content_type in variants:
        name = dotted.rsplit(".", 1)[-1]
        signature: list[str] = []
        call: list[str] = []
        for parameter in operation.path_parameters:
            signature.append(f"{parameter.py_name}: str")
            call.append(parameter.py_name)
        keyword: list[str] = []
        body = next((b for b in operation.bodies if b.content_type == content_type), None)
        json_field = None
        if body is not None and body.is_json:
            model = model_ref(models, body.schema_name) or "dict[str, Any]"
            optional = "" if operation.body_required else " | None = None"
            signature.append(f"body: {model} | Mapping[str, Any]{optional}")
            call.append("body")
            form = operation.multipart_body
            if form is not None and "_json" in form.schema.get("properties", {}):
                keyword.append("files: Mapping[str, FileInput] | None = None")
                call.append("files=files")
                json_field = "_json"
        elif body is not None:
            for wire, prop in body.schema.get("properties", {}).items():
                name_ = python_name(wire)
                required = wire in body.schema.get("required", [])
                typed = "FileInput" if prop.get("format") == "binary" else annotation(prop)
                if required:
                    signature.append(f"{name_}: {typed}")
                    call.append(name_)
                else:
                    keyword.append(f"{name_}: {typed} | None = None")
                    call.append(f"{name_}={name_}")
            extra = body.schema.get("additionalProperties")
            if isinstance(extra, dict) and extra.get("format") == "binary":
                keyword.append("files: Mapping[str, FileInput] | None = None")
                call.append("files=files")
        for parameter in operation.parameters:
            if parameter.location == "path":
                continue
            typed = annotation(parameter.schema)
            keyword.append(f"{parameter.py_name}: {typed} | None = None")
            call.append(f"{parameter.py_name}={parameter.py_name}")
        if streamed and len([t for t in operation.success.content_types]) > 1:
            keyword.append(f"accept: str = {operation.success.content_types[0]!r}")
            call.append("accept=accept")
        clash = _OPTION_NAMES & {item.split(":", 1)[0] for item in signature + keyword}
        if clash:
            raise ValueError(
                f"{operation.operation_id}: parameter {sorted(clash)[0]!r} would shadow the "
                "per-call option of the same name in the client"
            )
        if keyword:
            signature.append("*")
            signature.extend(keyword)
        suffix = "" if len(variants) == 1 else "_" + name
        grouped = parameters_of(operation)
        form_fields: list[tuple[str, str, bool, bool]] = []
        extra_files = False
        if body is not None and body.is_multipart:
            required_fields = set(body.schema.get("required", []))
            for wire, prop in body.schema.get("properties", {}).items():
                form_fields.append(
                    (
                        wire,
                        python_name(wire),
                        prop.get("format") == "binary",
                        wire in required_fields,
                    )
                )
            extra = body.schema.get("additionalProperties")
            extra_files = isinstance(extra, dict) and extra.get("format") == "binary"
        methods.append(
            ClientMethod(
                name=name,
                dotted=dotted,
                operation=operation,
                build=f"_build_{operation.operation_id}{suffix}",
                parse=f"_parse_{operation.operation_id}",
                signature=[_builtin_list(item) for item in signature],
                call=", ".join(call),
                returns=_builtin_list(returns),
                streamed=streamed,
                content_type=content_type,
                json_field=json_field,
                path_expression=_path_expression(operation),
                query=grouped["query"],
                header=grouped["header"],
                form=form_fields,
                extra_files=extra_files,
                accept=streamed and len(operation.success.content_types) > 1,
                page=paging(operation, models),
                call_keywords=[item.split(":", 1)[0] for item in keyword],
            )
        )
    return methods


def paging(operation: Operation, models: dict[str, str]) -> Page | None:
    """How ``operation`` pages, or ``None`` when it does not.

    The specs mark no operation as paged; the shape says it. A paged list is a ``GET`` with
    integer ``limit`` and ``offset`` query parameters whose JSON success body is an object
    with exactly one array property (the page's items, of a named schema) and, optionally,
    an integer ``total`` (every match, all pages). The iterator asks for pages of the
    ``limit`` parameter's ``maximum`` (bounded: one request per that many items)."""
    if operation.method != "GET" or operation.success.streamed:
        return None
    query = {p.name: p.schema for p in operation.parameters if p.location == "query"}
    if any(query.get(name, {}).get("type") != "integer" for name in ("limit", "offset")):
        return None
    schema = operation.success.schema
    properties: dict[str, Any] = schema.get("properties", {}) if schema else {}
    arrays = [name for name, prop in properties.items() if prop.get("type") == "array"]
    if schema.get("type", "object") != "object" or len(arrays) != 1:
        return None
    items = properties[arrays[0]].get("items", {})
    item_type = model_ref(models, _ref_name(items))
    if item_type is None:
        return None
    maximum = query["limit"].get("maximum")
    return Page(
        items=python_name(arrays[0]),
        item_type=item_type,
        page_size=int(maximum) if isinstance(maximum, int) else PAGE_SIZE_WITHOUT_MAXIMUM,
        total=properties.get("total", {}).get("type") == "integer"
        and "total" in schema.get("required", []),
    )


def _builtin_list(source: str) -> str:
    """``list[...]`` as ``builtins.list[...]``: a client method named ``list`` would shadow
    the builtin inside the namespace classes."""
    return re.sub(r"(?<![\w.])list\[", "builtins.list[", source)


def _path_expression(operation: Operation) -> str:
    path = operation.path
    for parameter in operation.path_parameters:
        path = path.replace("{" + parameter.name + "}", "{_segment(" + parameter.py_name + ")}")
    return ('f"' + path + '"') if operation.path_parameters else repr(path)


def client_tree(api: Api, models: dict[str, str], root_class: str) -> Namespace:
    """The client's namespaces (``agents.executions``) with their methods."""
    root = Namespace("", root_class)
    for operation in api.operations:
        for method in _methods(operation, models):
            node = root
            path: list[str] = []
            for part in method.dotted.split(".")[:-1]:
                path.append(part)
                child = next((c for c in node.children if c.name == part), None)
                if child is None:
                    class_name = "".join(p.capitalize() for p in path)
                    child = Namespace(part, f"_{class_name}")
                    node.children.append(child)
                node = child
            node.methods.append(method)
    for namespace in flatten(root):
        names = {method.name for method in namespace.methods}
        for method in namespace.methods:
            if method.page is not None and f"iter_{method.name}" in names:
                raise ValueError(f"{method.dotted}: iter_{method.name} is already a method")
    return root


def flatten(namespace: Namespace) -> list[Namespace]:
    """Every namespace below and including ``namespace``, children first."""
    result: list[Namespace] = []
    for child in namespace.children:
        result.extend(flatten(child))
    result.append(namespace)
    return result


def parameters_of(operation: Operation) -> dict[str, list[tuple[str, str, bool]]]:
    """Query and header parameters: (wire name, python name, comma separated)."""
    grouped: dict[str, list[tuple[str, str, bool]]] = {"query": [], "header": []}
    for parameter in operation.parameters:
        if parameter.location in grouped:
            grouped[parameter.location].append(
                (parameter.name, parameter.py_name, parameter.comma_separated)
            )
    return grouped
