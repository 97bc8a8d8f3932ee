"""OpenAPI changes, classified by api-smart-diff and then by this project's own contract.

api-smart-diff (``tools/contracts/openapi-diff.mjs``) knows OpenAPI's general rules: a removed
operation, response or response property breaks clients, a narrowed request enum or a changed
type breaks them, an added optional field or operation does not. On top of it, what the
project's conventions (``specs/README.md``) make breaking here:

- request bodies are closed (``additionalProperties: false``), so removing a request property
  breaks the clients that still send it (422), which the general rule calls non-breaking;
- a request property that becomes required breaks clients that omit it, even when it had a
  default (api-smart-diff forgives that case);
- ``operationId`` and ``x-client-method`` name the handler method and the client method, so
  renaming either breaks generated code; so do ``x-codegen``'s package, client and error shape;
- an added *required* parameter breaks callers (api-smart-diff reports a new ``parameters``
  list as one non-breaking addition);
- removing a ``components/schemas`` entry removes a model class from the generated package.

Changes inside ``components`` are otherwise reported where operations use them (once per
operation, so the report says which operations are affected), not a second time.
"""

from __future__ import annotations

import json
from typing import Any

from codegen.contracts.changes import Change, Severity
from codegen.contracts.tools import TOOLS_DIR, ToolError, node, run_tool, tool_path

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
TOOL_SEVERITY = {
    "breaking": Severity.BREAKING,
    "non-breaking": Severity.NON_BREAKING,
    "deprecated": Severity.NON_BREAKING,
    "annotation": Severity.ANNOTATION,
    "unclassified": Severity.ANNOTATION,
}
DOCUMENTATION_KEYS = ("description", "summary", "title", "example", "examples", "externalDocs")
CODEGEN_BREAKING_KEYS = ("package", "client", "error-style", "error-schema")
NAMING_KEYS = ("operationId", "x-client-method")


def openapi_changes(before: dict[str, Any], after: dict[str, Any]) -> list[Change]:
    """Every change from ``before`` (the released document) to ``after``, classified."""
    tool_path("api-smart-diff/package.json")
    script = TOOLS_DIR / "openapi-diff.mjs"
    payload = json.dumps({"before": before, "after": after})
    result = run_tool([node(), str(script)], stdin=payload)
    if result.returncode != 0:
        raise ToolError(f"api-smart-diff failed: {result.stderr.strip()[-2000:]}")
    try:
        diffs = json.loads(result.stdout)
    except json.JSONDecodeError as exc:
        raise ToolError(f"api-smart-diff wrote no JSON: {exc}") from exc
    if not isinstance(diffs, list):
        raise ToolError("api-smart-diff wrote no list of changes")
    changes: list[Change] = []
    for diff in diffs:
        change = _classify(diff, after)
        if change is not None and change not in changes:
            changes.append(change)
    return changes


def _classify(diff: Any, after: dict[str, Any]) -> Change | None:
    """One api-smart-diff diff as a Change, with the project's rules applied (None: skip)."""
    if not isinstance(diff, dict) or not isinstance(diff.get("path"), list):
        raise ToolError(f"api-smart-diff wrote an unexpected change: {str(diff)[:200]}")
    path = [str(part) for part in diff["path"]]
    action = str(diff.get("action", "change"))
    severity = TOOL_SEVERITY.get(str(diff.get("type")), Severity.ANNOTATION)
    description = diff.get("description")
    message = str(description) if description else f"[{action.capitalize()}] {path[-1]}"
    rule = f"openapi-{action}"
    if not path or path == ["info", "version"]:
        return None
    if path[0] == "components":
        return _component_change(path, action)
    if path[0] == "x-codegen" and len(path) >= 2:
        breaking = path[1] in CODEGEN_BREAKING_KEYS
        return Change(
            Severity.BREAKING if breaking else Severity.NON_BREAKING,
            ".".join(path),
            f"[{action.capitalize()}] x-codegen {path[1]}: changes the generated code's names",
            "codegen-naming",
        )
    if any(part in DOCUMENTATION_KEYS for part in path):
        severity = Severity.ANNOTATION
    elif path[0] == "paths" and len(path) == 4 and path[3] in NAMING_KEYS:
        severity, rule = Severity.BREAKING, "renamed-operation"
        message = f"[{action.capitalize()}] {path[3]}: renames generated handler/client methods"
    elif diff.get("type") == "unclassified" and any(part.startswith("x-") for part in path):
        # An extension the tool does not know (x-codegen-raw-body, links' x- keys): it changes
        # what is generated, so it is listed as a change, not as documentation.
        severity = Severity.NON_BREAKING
    elif "requestBody" in path and len(path) >= 2 and path[-2] == "required" and action == "add":
        severity, rule = Severity.BREAKING, "request-property-now-required"
        message += "; clients that omit it get a validation error"
    elif "requestBody" in path and path[-1] == "required" and action == "add":
        severity, rule = Severity.BREAKING, "request-property-now-required"
    elif "requestBody" in path and len(path) >= 2 and path[-2] == "properties":
        if action == "remove":
            severity, rule = Severity.BREAKING, "request-property-removed"
            message += (
                "; request bodies are closed (additionalProperties: false): "
                "clients that send it get 422"
            )
    elif "parameters" in path and action == "add" and path.index("parameters") >= len(path) - 2:
        added = _node_at(after, path)
        params = added if isinstance(added, list) else [added]
        required = [
            str(p.get("name"))
            for p in (_resolve(after, p) for p in params)
            if isinstance(p, dict) and p.get("required") is True
        ]
        if required:
            severity, rule = Severity.BREAKING, "required-parameter-added"
            message = f"[Added] required parameter(s) {', '.join(required)}"
    return Change(severity, _location(path), message, rule)


def _component_change(path: list[str], action: str) -> Change | None:
    if len(path) != 3 or path[1] != "schemas" or action not in ("add", "remove"):
        return None
    if action == "remove":
        return Change(
            Severity.BREAKING,
            ".".join(path),
            f"[Removed] schema {path[2]}: its model class leaves the generated package",
            "model-removed",
        )
    return Change(Severity.NON_BREAKING, ".".join(path), f"[Added] schema {path[2]}", "model-added")


def _location(path: list[str]) -> str:
    """``POST /generate requestBody.content.application/json…`` for a path under ``paths``."""
    if path[0] == "paths" and len(path) >= 3 and path[2] in METHODS:
        head = f"{path[2].upper()} {path[1]}"
        return f"{head} {'.'.join(path[3:])}" if len(path) > 3 else head
    if path[0] == "paths" and len(path) >= 2:
        return " ".join([path[1], ".".join(path[2:])]).strip()
    return ".".join(path)


def _resolve(document: dict[str, Any], node: Any) -> Any:
    """Follow local ``$ref``s (a bounded number of hops) to the node they name."""
    for _ in range(64):
        if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
            return node
        ref = str(node["$ref"])
        if not ref.startswith("#/"):
            return node
        target: Any = document
        for part in ref[2:].split("/"):
            key = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or key not in target:
                return node
            target = target[key]
        node = target
    return node


def _node_at(document: dict[str, Any], path: list[str]) -> Any:
    """The node at an api-smart-diff path (which walks through ``$ref``s), or None."""
    node: Any = document
    for part in path:
        node = _resolve(document, node)
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return _resolve(document, node)
