"""A byte buffer that keeps only the last N bytes written to it."""

from __future__ import annotations


class TailBuffer:
    """Keeps the last ``limit`` bytes appended; memory never grows past that."""

    def __init__(self, limit: int) -> None:
        if limit <= 0:
            raise ValueError("limit must be positive")
        self._limit = limit
        self._buffer = bytearray()
        self.dropped_bytes = 0

    def append(self, data: bytes) -> None:
        if len(data) >= self._limit:
            self.dropped_bytes += len(self._buffer) + len(data) - self._limit
            self._buffer = bytearray(data[-self._limit :])
            return
        self._buffer += data
        excess = len(self._buffer) - self._limit
        if excess > 0:
            del self._buffer[:excess]
            self.dropped_bytes += excess

    def text(self) -> str:
        """The kept bytes as UTF-8 (bad sequences replaced), marked when earlier bytes were
        dropped."""
        text = self._buffer.decode("utf-8", errors="replace")
        if self.dropped_bytes:
            return f"[{self.dropped_bytes} earlier bytes dropped]\n{text}"
        return text
