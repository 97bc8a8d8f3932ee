"""Safe relative paths: the only names a run writes into its directories."""

from __future__ import annotations

from pathlib import Path, PurePosixPath


class UnsafePathError(ValueError):
    """A path that could escape its directory or is not a plain relative file name."""


def check_relative_path(path: str) -> str:
    """Return ``path`` if it is a safe relative POSIX path, else raise UnsafePathError.

    Safe: not empty, not absolute, no backslash or control character, no empty, ``.`` or ``..``
    component (the rules of the workspace API, handlers/agents/paths.py, without its lengths).
    """
    if not path:
        raise UnsafePathError("empty path")
    if "\\" in path or any(ord(char) < 32 or ord(char) == 127 for char in path):
        raise UnsafePathError(f"path {path!r} contains a backslash or a control character")
    if path.startswith("/"):
        raise UnsafePathError(f"path {path!r} is absolute")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise UnsafePathError(f"path {path!r} has an empty, '.' or '..' component")
    return path


def resolve_inside(root: Path, path: str) -> Path:
    """Join a checked relative path to ``root``, refusing any result outside ``root``."""
    target = root.joinpath(*PurePosixPath(check_relative_path(path)).parts)
    if not target.resolve().is_relative_to(root.resolve()):
        raise UnsafePathError(f"path {path!r} leaves its directory")
    return target
