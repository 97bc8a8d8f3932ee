"""Safe relative paths: the only names a run writes into its directories, and the rules the
workspace API (handlers/agents/domain/paths.py) applies to the paths it accepts."""

from __future__ import annotations

from pathlib import Path, PurePosixPath


class UnsafePathError(ValueError):
    """A path that could escape its directory or is not a plain relative file name."""


def path_problem(
    path: str, *, max_path_bytes: int | None = None, max_segment_bytes: int | None = None
) -> str | None:
    """Why ``path`` is not a safe relative POSIX path (``"it is empty"``, ...), or None.

    Safe: not empty, not absolute, no NUL, control character or backslash, no empty, ``.`` or
    ``..`` segment, and, where limits are given, at most that many bytes in all and per segment.
    """
    if not path:
        return "it is empty"
    if "\x00" in path:
        return "it contains a NUL character"
    if any(ord(char) < 32 or ord(char) == 127 for char in path):
        return "it contains a control character"
    if "\\" in path:
        return "it contains a backslash (use '/' between folders)"
    if path.startswith("/"):
        return "it is absolute (it must be relative to the workspace)"
    if max_path_bytes is not None and len(path.encode()) > max_path_bytes:
        return f"it is longer than {max_path_bytes} bytes"
    for segment in path.split("/"):
        if segment == "":
            return "it has an empty segment ('//' or a trailing '/')"
        if segment in (".", ".."):
            return f"it has a '{segment}' segment"
        if max_segment_bytes is not None and len(segment.encode()) > max_segment_bytes:
            return f"a segment is longer than {max_segment_bytes} bytes"
    return None


def check_relative_path(path: str) -> str:
    """Return ``path`` if it is a safe relative POSIX path (no length limits), else raise
    UnsafePathError saying why."""
    reason = path_problem(path)
    if reason is not None:
        raise UnsafePathError(f"unsafe path {path!r}: {reason}")
    return path


def resolve_inside(root: Path, path: str) -> Path:
    """Join a checked relative path to ``root``, refusing any result outside ``root``."""
    target = root.joinpath(*PurePosixPath(check_relative_path(path)).parts)
    if not target.resolve().is_relative_to(root.resolve()):
        raise UnsafePathError(f"path {path!r} leaves its directory")
    return target
