"""Reading what the program left in its output directory, within the run's limits.

Blocking file work: call these in a thread (the runner does).
"""

from __future__ import annotations

import json
import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from handlers.agents.runner.paths import UnsafePathError, check_relative_path
from handlers.agents.runner.schemas import InvalidSchemaError, validate_document
from handlers.agents.runner.sizes import format_bytes
from handlers.agents.runner.spec import RunLimits

logger = logging.getLogger(__name__)

OUTPUT_JSON_NAME = "output.json"
ISSUES_NAME = "issues.md"
TRACE_NAME = "trace.jsonl"
MAX_INVALID_LINE_CHARS = 1000


class OutputLimitError(Exception):
    """The output directory holds more bytes or files than the limits allow."""


@dataclass(frozen=True)
class CollectedOutput:
    """The output directory, interpreted; ``error`` makes a finished run fail."""

    error: str | None = None
    output_json: object | None = None
    schema_valid: bool | None = None
    schema_errors: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    issues_md: str | None = None
    trace: list[dict[str, object]] = field(default_factory=list)


def collect_output(
    output_dir: Path, limits: RunLimits, output_schema: object | None
) -> CollectedOutput:
    """Read and interpret ``output_dir``: output.json (checked against ``output_schema`` when
    given), issues.md, trace.jsonl and every other file. Over a limit, nothing is kept."""
    try:
        files = read_output_files(output_dir, limits)
    except OutputLimitError as exc:
        return CollectedOutput(error=str(exc))
    error = None
    output_json = None
    schema_valid = None
    schema_errors: list[str] = []
    raw_output = files.pop(OUTPUT_JSON_NAME, None)
    if raw_output is not None:
        try:
            output_json = parse_json(raw_output)
        except ValueError as exc:
            error = f"{OUTPUT_JSON_NAME} is not valid JSON: {exc}"
    if output_schema is not None and error is None:
        if raw_output is None:
            schema_valid, schema_errors = False, [f"{OUTPUT_JSON_NAME} is missing"]
        else:
            try:
                schema_errors = validate_document(output_json, output_schema)
                schema_valid = not schema_errors
            except InvalidSchemaError as exc:
                schema_errors = [f"output schema is invalid: {'; '.join(exc.errors)}"]
    raw_issues = files.pop(ISSUES_NAME, None)
    raw_trace = files.pop(TRACE_NAME, None)
    return CollectedOutput(
        error=error,
        output_json=output_json,
        schema_valid=schema_valid,
        schema_errors=schema_errors,
        files=files,
        issues_md=None if raw_issues is None else raw_issues.decode("utf-8", errors="replace"),
        trace=[] if raw_trace is None else parse_trace(raw_trace),
    )


def read_output_files(output_dir: Path, limits: RunLimits) -> dict[str, bytes]:
    """Every regular file under ``output_dir`` by relative path.

    Symlinks are followed only to regular files inside ``output_dir`` (never outside); symlinked
    directories, FIFOs, sockets and devices are skipped, as are names that are not safe relative
    UTF-8 paths. Raises OutputLimitError past ``max_output_files`` or ``max_output_bytes``.
    """
    root = os.path.realpath(output_dir)
    chosen: list[tuple[str, str]] = []
    total_bytes = 0
    for dirpath, _, filenames in os.walk(root, followlinks=False):
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            relative = os.path.relpath(path, root)
            found = _readable_source(root, path)
            if found is None or not _acceptable_name(relative):
                continue
            source, size = found
            if len(chosen) == limits.max_output_files:
                raise OutputLimitError(f"output has more than {limits.max_output_files} files")
            total_bytes += size
            _check_size(total_bytes, limits)
            chosen.append((relative, source))
    files: dict[str, bytes] = {}
    read_bytes = 0
    for relative, source in chosen:
        try:
            content = _read_regular_file(source, limits.max_output_bytes - read_bytes + 1)
        except OSError:  # removed or replaced meanwhile (by a process that escaped the group)
            continue
        read_bytes += len(content)
        _check_size(read_bytes, limits)  # a file may have grown since it was measured
        files[relative] = content
    return files


def parse_json(raw: bytes) -> object:
    """Strict JSON: NaN and Infinity are refused (stores and clients cannot carry them)."""
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc


def parse_trace(raw: bytes) -> list[dict[str, object]]:
    """One JSON object per line; blank lines skipped; any other line becomes
    ``{"invalid_line": <1-based number>, "text": <its first 1000 characters>}``."""
    events: list[dict[str, object]] = []
    for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            event = parse_json(line.encode())
        except ValueError:
            event = None
        if isinstance(event, dict):
            events.append(event)
        else:
            events.append({"invalid_line": number, "text": line[:MAX_INVALID_LINE_CHARS]})
    return events


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def _check_size(total_bytes: int, limits: RunLimits) -> None:
    if total_bytes > limits.max_output_bytes:
        raise OutputLimitError(f"output exceeds {format_bytes(limits.max_output_bytes)}")


def _readable_source(root: str, path: str) -> tuple[str, int] | None:
    """The path to read for an entry and its size, or None when it must be skipped."""
    try:
        status = os.lstat(path)
        if stat.S_ISLNK(status.st_mode):
            target = os.path.realpath(path)
            if os.path.commonpath([root, target]) != root:
                logger.warning("output symlink leaves the output directory, skipped: %s", path)
                return None
            path, status = target, os.stat(target)
    except OSError:  # vanished or dangling
        return None
    return (path, status.st_size) if stat.S_ISREG(status.st_mode) else None


def _acceptable_name(relative: str) -> bool:
    try:
        check_relative_path(relative)
        relative.encode("utf-8")
    except (UnsafePathError, UnicodeEncodeError):
        logger.warning("output file with an unusable name, skipped: %r", relative)
        return False
    return True


def _read_regular_file(path: str, at_most: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return b""
        return file.read(at_most)
