"""Bounds that keep every expression cheap: no expression can exhaust memory or CPU."""

from __future__ import annotations

import math

MAX_EXPRESSION_CHARS = 2000
"""Characters of one expression (between ``${{`` and ``}}``)."""
MAX_NESTING = 32
"""Depth of nested sub-expressions (parentheses, calls, literals, operators)."""
MAX_STRING_CHARS = 1_000_000
"""Length of any string an expression builds (concatenation, repetition, join, replace...)."""
MAX_COLLECTION_ITEMS = 100_000
"""Items of any list or object an expression builds."""
MAX_INT_BITS = 1024
"""Size of any integer an expression builds (about 308 decimal digits)."""


class LimitError(ValueError):
    """An operation would build a value beyond the limits."""


def check_string(length: int) -> None:
    if length > MAX_STRING_CHARS:
        raise LimitError(f"string result too long ({length} characters, max {MAX_STRING_CHARS})")


def check_items(count: int) -> None:
    if count > MAX_COLLECTION_ITEMS:
        raise LimitError(f"result has too many items ({count}, max {MAX_COLLECTION_ITEMS})")


def check_number(value: int | float) -> int | float:
    """Return ``value`` if it is a finite float or an int within MAX_INT_BITS."""
    if isinstance(value, float) and not math.isfinite(value):
        raise LimitError("number result is not finite")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise LimitError(f"number result too large (more than {MAX_INT_BITS} bits)")
    return value


def check_power(base: int | float, exponent: int | float) -> None:
    """Refuse ``base ** exponent`` before computing it when the result would be too large."""
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and exponent > 0
        and abs(base) > 1
        and exponent * math.log2(abs(base)) > MAX_INT_BITS
    ):
        raise LimitError(f"number result too large (more than {MAX_INT_BITS} bits)")
