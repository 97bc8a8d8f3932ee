"""The client view of each operation: method names, arguments, request building."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from codegen.spec import Api, Operation, python_name
from codegen.types import annotation, model_ref, success_type

__all__ = ["ClientMethod", "Namespace", "client_tree"]


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
            )
        )
    return methods


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
