"""Human-readable byte sizes for error messages."""

from __future__ import annotations

_UNITS = (
    (1024**3, "GiB"),
    (1000**3, "GB"),
    (1024**2, "MiB"),
    (1000**2, "MB"),
    (1024, "KiB"),
    (1000, "kB"),
)


def format_bytes(size: int) -> str:
    """``size`` in the largest unit that divides it exactly: 50 MB, 2 GiB, 1500 bytes."""
    for unit_size, unit in _UNITS:
        if size >= unit_size and size % unit_size == 0:
            return f"{size // unit_size} {unit}"
    return f"{size} bytes"
