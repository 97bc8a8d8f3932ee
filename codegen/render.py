"""Rendering one API's ``generated/<package>/`` files from its spec."""

from __future__ import annotations

import ast
import json
import tempfile
from pathlib import Path
from typing import Any

import jinja2

from codegen.clients import client_tree, flatten
from codegen.models import generate_models, model_names
from codegen.spec import Api
from codegen.views import operation_views

__all__ = ["render_api"]

TEMPLATES = Path(__file__).with_name("templates")
EXTENSIONS = Path(__file__).with_name("extensions")
RENDERERS = {
    "fastapi-422": "fastapi_renderer",
    "envelope": "envelope_renderer",
    "plain-text": "plain_text_renderer",
}


def _pytuple(values: Any) -> str:
    items = list(values)
    return "(" + ", ".join(json.dumps(v) for v in items) + ("," if len(items) == 1 else "") + ")"


def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    environment.filters["pytuple"] = _pytuple
    return environment


def _camel(package: str) -> str:
    return "".join(part.capitalize() for part in package.replace("-", "_").split("_"))


def python_name_upper(prefix: str) -> str:
    """``Service`` → ``SERVICE``, ``RateLimit`` → ``RATE_LIMIT``."""
    import re

    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", prefix).upper()


def _default_base_url(api: Api) -> str:
    for server in api.document.get("servers", []):
        url = str(server.get("url", ""))
        if url.startswith("http"):
            return url
    return str(api.document.get("x-codegen", {}).get("default-base-url", "http://127.0.0.1:8000"))


def _client_extensions(api: Api) -> tuple[str | None, set[str]]:
    """The hand-written client extension module named by ``x-codegen.client-extensions`` (a
    module of ``codegen/extensions/``): its source, and the classes it defines. A namespace
    class ``_WorkflowsExecutions`` gains the mixin ``WorkflowsExecutionsExtension`` (and the
    async one ``AsyncWorkflowsExecutionsExtension``) when the module defines it."""
    name = api.document.get("x-codegen", {}).get("client-extensions")
    if not name:
        return None, set()
    source = (EXTENSIONS / f"{name}.py").read_text(encoding="utf-8")
    classes = {node.name for node in ast.parse(source).body if isinstance(node, ast.ClassDef)}
    return source, classes


def render_api(api: Api, target: Path) -> list[Path]:
    """Write ``models.py``, ``handlers.py``, ``routes.py``, ``client.py``, ``openapi.json``
    and ``__init__.py`` for ``api`` under ``target``; returns the files written."""
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        models_file = Path(scratch) / "models.py"
        generate_models(api.path, models_file)
        models_source = models_file.read_text(encoding="utf-8")
    models_source = models_source.replace(
        f"#   filename:  {api.path}", f"#   filename:  specs/{api.path.name}"
    )
    names = model_names(models_source, list(api.schemas))
    views = operation_views(api, names)
    context: dict[str, Any] = {
        "api": api,
        "spec_file": api.path.name,
        "views": views,
        "protocol": f"{_camel(api.package)}Handlers",
        "routes_class": f"{_camel(api.package)}Routes",
        "renderer": RENDERERS[api.error_style],
        "adapters": {k: v for view in views for k, v in view.adapters.items()},
        "forms": {k: v for view in views for k, v in view.forms.items()},
    }
    prefix = api.client[: -len("Client")] if api.client.endswith("Client") else api.client
    root = client_tree(api, names, api.client)
    context.update(
        client=api.client,
        prefix=prefix,
        env_prefix=python_name_upper(prefix),
        default_base_url=_default_base_url(api),
        bearer=api.security_bearer,
        root=root,
        namespaces=flatten(root),
        methods=[m for ns in flatten(root) for m in ns.methods],
        operations=api.operations,
        model_map=names,
    )
    extension_source, extension_classes = _client_extensions(api)
    context.update(extensions=extension_classes)
    environment = _environment()
    files = {
        "__init__.py": f'"""Generated from specs/{api.path.name} by `make generate`; '
        'do not edit."""\n',
        "models.py": models_source,
        "handlers.py": environment.get_template("handlers.py.jinja").render(context),
        "routes.py": environment.get_template("routes.py.jinja").render(context),
        "client.py": environment.get_template("client.py.jinja").render(context),
        "openapi.json": json.dumps(api.document, indent=1, sort_keys=False, ensure_ascii=False)
        + "\n",
    }
    if extension_source is not None:
        files["client_extensions.py"] = (
            "# Copied from codegen/extensions/ by `make generate`; do not edit here.\n"
            + extension_source
        )
    written = []
    for name, content in files.items():
        path = target / name
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written
