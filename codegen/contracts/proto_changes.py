"""Proto changes: ``buf breaking`` for what breaks, and the two compiled images for what is
added.

``buf breaking`` uses its strictest rule set, ``FILE``: the protos are served over gRPC (wire),
their proto3 JSON form is accepted on the HTTP port (JSON names), and ``make generate`` turns
them into Python modules (file, package and type names); each of these is a contract. buf
reports only breaking changes, so the additions (files, messages, fields, enum values,
services, methods) come from comparing the two ``buf build`` images: they are non-breaking.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codegen.contracts.changes import Change, Severity
from codegen.contracts.tools import ToolError, run_tool, tool_path

BUF_CONFIG = json.dumps({"version": "v1", "breaking": {"use": ["FILE"]}})
# buf breaking's exit status when it found breaking changes (0: none; others: it failed).
BUF_FINDINGS = 100


def proto_changes(released: Path, current: Path, label: str) -> list[Change]:
    """Every change from the ``released`` proto tree to the ``current`` one; locations are
    ``<label>/<file>:<line>:<column>``."""
    return [*_breaking(released, current, label), *_additions(released, current, label)]


def _buf() -> str:
    return str(tool_path(".bin/buf"))


def _breaking(released: Path, current: Path, label: str) -> list[Change]:
    result = run_tool(
        [
            _buf(),
            "breaking",
            str(current),
            "--against",
            str(released),
            "--config",
            BUF_CONFIG,
            "--against-config",
            BUF_CONFIG,
            "--error-format",
            "json",
        ],
    )
    if result.returncode not in (0, BUF_FINDINGS):
        raise ToolError(f"buf breaking failed: {(result.stderr or result.stdout).strip()[-2000:]}")
    changes = []
    for line in result.stdout.splitlines():
        if not line.strip():
            continue
        try:
            finding = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ToolError(f"buf breaking wrote an unexpected line: {line[:200]}") from exc
        path = Path(str(finding.get("path", "")))
        if path.is_absolute() and path.is_relative_to(current):
            path = path.relative_to(current)
        where = f"{label}/{path}:{finding.get('start_line', 0)}:{finding.get('start_column', 0)}"
        changes.append(
            Change(
                Severity.BREAKING,
                where,
                str(finding.get("message", "")),
                str(finding.get("type", "buf")),
            )
        )
    return changes


def _image(root: Path) -> dict[str, Any]:
    """The compiled descriptor set of a proto tree (``buf build``), without imports."""
    result = run_tool(
        [
            _buf(),
            "build",
            str(root),
            "--config",
            BUF_CONFIG,
            "--exclude-imports",
            "--exclude-source-info",
            "-o",
            "-#format=json",
        ]
    )
    if result.returncode != 0:
        raise ToolError(f"buf build {root} failed: {result.stderr.strip()[-2000:]}")
    try:
        image: dict[str, Any] = json.loads(result.stdout or "{}")
    except json.JSONDecodeError as exc:
        raise ToolError(f"buf build wrote no JSON image: {exc}") from exc
    return image


def _symbols(image: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """``{symbol: (file, kind)}`` for every file, message, field, enum, value, service, method."""
    found: dict[str, tuple[str, str]] = {}
    for file in image.get("file", []):
        name = str(file.get("name"))
        package = str(file.get("package", ""))
        found[f"file {name}"] = (name, "file")
        for key, kind in _declarations(file, package):
            found[key] = (name, kind)
    return found


def _declarations(file: dict[str, Any], package: str) -> Iterator[tuple[str, str]]:
    def messages(items: list[dict[str, Any]], scope: str) -> Iterator[tuple[str, str]]:
        for message in items:
            full = f"{scope}.{message.get('name')}".lstrip(".")
            yield f"message {full}", "message"
            for field in message.get("field", []):
                yield f"field {full}.{field.get('name')} = {field.get('number')}", "field"
            yield from enums(message.get("enumType", []), full)
            yield from messages(message.get("nestedType", []), full)

    def enums(items: list[dict[str, Any]], scope: str) -> Iterator[tuple[str, str]]:
        for enum in items:
            full = f"{scope}.{enum.get('name')}".lstrip(".")
            yield f"enum {full}", "enum"
            for value in enum.get("value", []):
                yield f"enum value {full}.{value.get('name')} = {value.get('number')}", "value"

    yield from messages(file.get("messageType", []), package)
    yield from enums(file.get("enumType", []), package)
    for service in file.get("service", []):
        full = f"{package}.{service.get('name')}".lstrip(".")
        yield f"service {full}", "service"
        for method in service.get("method", []):
            yield f"rpc {full}.{method.get('name')}", "rpc"


def _additions(released: Path, current: Path, label: str) -> list[Change]:
    before = _symbols(_image(released))
    after = _symbols(_image(current))
    added = [symbol for symbol in after if symbol not in before]
    # An added file or message implies its contents: list the outermost addition only.
    scopes = ("message ", "enum ", "service ")
    prefixes = [s.split(" ", 1)[1] for s in added if s.startswith(scopes)]
    files = {after[s][0] for s in added if s.startswith("file ")}
    changes = []
    for symbol in added:
        file, kind = after[symbol]
        name = symbol.split(" ", 2 if symbol.startswith("enum value ") else 1)[-1]
        inside = [p for p in prefixes if name.startswith(p + ".") and name != p]
        if (kind != "file" and file in files) or inside:
            continue
        changes.append(
            Change(Severity.NON_BREAKING, f"{label}/{file}", f"[Added] {symbol}", f"{kind}-added")
        )
    return changes
