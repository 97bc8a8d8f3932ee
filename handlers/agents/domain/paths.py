"""Safe relative paths of workspace files.

A workspace path is relative (no leading ``/``), uses ``/`` between segments, and has no
empty, ``.`` or ``..`` segment, no backslash, no NUL or other control character, at most 512
bytes in all and 255 per segment. A path also may not collide with another file of the same
workspace used as a folder (``a`` and ``a/b`` cannot both exist), since the workspace is
materialized as a directory tree when the agent runs.

A violation raises ``BadRequest`` with one issue naming the parameter (``query.path``,
``body.files.2.path``) and quoting the rejected path; so do two paths of one request that
collide. A path colliding with a stored one is a conflict with the workspace (409,
:func:`conflicting`).
"""

from __future__ import annotations

from collections.abc import Iterable

from handlers.agents.runner.paths import path_problem
from webrest import BadRequest, ErrorDetail, HttpError

__all__ = [
    "MAX_PATH_BYTES",
    "MAX_SEGMENT_BYTES",
    "collision",
    "invalid",
    "join_prefix",
    "safe_path",
]

MAX_PATH_BYTES = 512
MAX_SEGMENT_BYTES = 255


def invalid(field: tuple[str | int, ...], path: str, reason: str) -> BadRequest:
    """The 400 for ``path`` given in ``field``."""
    message = f"Unsafe path {path!r}: {reason}"
    return BadRequest(message, [ErrorDetail(field, message, "value_error", path)])


def safe_path(path: str, field: tuple[str | int, ...]) -> str:
    """``path`` when it is a safe relative path; otherwise a 400 naming ``field``."""
    reason = path_problem(path, max_path_bytes=MAX_PATH_BYTES, max_segment_bytes=MAX_SEGMENT_BYTES)
    if reason is not None:
        raise invalid(field, path, reason)
    return path


def join_prefix(prefix: str | None, path: str) -> str:
    """``path`` under ``prefix`` (a folder; one trailing ``/`` allowed), both checked."""
    safe_path(path, ("query", "path"))
    if prefix is None:
        return path
    folder = prefix[:-1] if prefix.endswith("/") else prefix
    safe_path(folder, ("query", "prefix"))
    return safe_path(f"{folder}/{path}", ("query", "path"))


def conflicting(field: tuple[str | int, ...], path: str, stored: str, what: str) -> HttpError:
    """The 409 for ``path`` (given in ``field``) colliding with the stored path ``stored``."""
    message = f"Path {path!r} collides with the {what} {stored!r}"
    return HttpError(409, message, [ErrorDetail(field, message, "conflict", path)])


def collision(path: str, existing: Iterable[str]) -> str | None:
    """An existing path that ``path`` would collide with (one is the other's folder)."""
    for other in existing:
        if other != path and (other.startswith(path + "/") or path.startswith(other + "/")):
            return other
    return None
