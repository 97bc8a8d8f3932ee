"""The workspaces a worker ran lately, in memory, by the hash of their snapshot.

A workspace snapshot is content-addressed (its hash names its file list, and each file is a
blob named by the hash of its content), so an entry can never be stale: runs of an agent
whose workspace did not change since its last run on this worker start without reading its
files from the blob store (and without a trip to a thread to do it). Bounded by the total size
of the files kept; the least recently used workspaces go first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["DEFAULT_MAX_BYTES", "WorkspaceCache"]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""Total bytes of workspace files a worker keeps (a larger workspace is never kept)."""


class WorkspaceCache:
    """Workspaces (path -> content, read-only) by snapshot hash, up to ``max_bytes``."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, tuple[Mapping[str, bytes], int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # filled from worker threads

    def get(self, snapshot: str) -> Mapping[str, bytes] | None:
        """The workspace of ``snapshot`` if kept (it becomes the most recently used)."""
        with self._lock:
            entry = self._entries.get(snapshot)
            if entry is None:
                return None
            self._entries.move_to_end(snapshot)
            return entry[0]

    def put(self, snapshot: str, files: Mapping[str, bytes]) -> Mapping[str, bytes]:
        """Keep ``files`` as the workspace of ``snapshot`` (unless larger than the whole
        cache); the read-only mapping kept."""
        kept = MappingProxyType(dict(files))
        size = sum(len(path) + len(content) for path, content in kept.items())
        if size > self.max_bytes:
            return kept
        with self._lock:
            previous = self._entries.pop(snapshot, None)
            if previous is not None:
                self._bytes -= previous[1]
            self._entries[snapshot] = (kept, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped
        return kept

    @property
    def size_bytes(self) -> int:
        """Bytes kept now."""
        return self._bytes
