"""Content-addressed file storage: each content once, named by its SHA-256.

A blob lives at ``<root>/ab/cdef…`` (the first two hex digits name the folder). Writes are
atomic (a temporary file in the same folder, fsync, rename, then fsync of the folder), so a
reader never sees a partial blob and a crash leaves either nothing or the whole content; a
content already stored is not written again. Database rows refer to blobs by hash: blobs are
written before the transaction that refers to them, so a failed transaction leaves at worst an
unreferenced blob, never a row without its content.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

__all__ = ["BlobNotFound", "BlobStore", "sha256_hex"]

_HASH = re.compile(r"^[0-9a-f]{64}$")


class BlobNotFound(LookupError):
    """No blob has this hash."""


def sha256_hex(data: bytes) -> str:
    """The blob name of ``data``."""
    return hashlib.sha256(data).hexdigest()


class BlobStore:
    """Blobs under ``root`` (created on first use)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path_of(self, digest: str) -> Path:
        """Where the blob ``digest`` is (or would be) stored."""
        if not _HASH.match(digest):
            raise ValueError(f"not a SHA-256 hex digest: {digest!r}")
        return self.root / digest[:2] / digest[2:]

    def put(self, data: bytes) -> str:
        """Store ``data`` (unless already stored) and return its hash."""
        digest = sha256_hex(data)
        target = self.path_of(digest)
        if target.exists():
            return digest
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        _fsync_directory(target.parent)
        return digest

    def get(self, digest: str) -> bytes:
        """The content of blob ``digest``."""
        try:
            return self.path_of(digest).read_bytes()
        except FileNotFoundError:
            raise BlobNotFound(digest) from None

    def exists(self, digest: str) -> bool:
        """Whether blob ``digest`` is stored."""
        return self.path_of(digest).is_file()


def _fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
