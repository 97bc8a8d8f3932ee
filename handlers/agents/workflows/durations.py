"""Durations (``30``, ``1.5s``, ``500ms``, ``5m``, ``2h``, ``1d``) and timestamps (ISO 8601)."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
MAX_WAIT_SECONDS = 30 * 86400.0
"""The longest a wait step may wait."""


class DurationError(ValueError):
    """Not a valid duration or timestamp."""


def parse_duration(value: object, *, maximum: float, allow_zero: bool = False) -> float:
    """Seconds of ``value``: a number of seconds or a string with a unit."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION.fullmatch(value.strip())):
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    else:
        raise DurationError(
            f"expected a duration (seconds, or a number with ms, s, m, h or d), got {value!r}"
        )
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        raise DurationError(f"a duration must be {'0 or more' if allow_zero else 'positive'}")
    if seconds > maximum:
        raise DurationError(f"a duration may not exceed {maximum:g} seconds")
    return seconds


def parse_timestamp(value: object) -> datetime:
    """An ISO 8601 timestamp; one without a time zone is taken as UTC."""
    if not isinstance(value, str):
        raise DurationError(f"expected an ISO 8601 timestamp, got {value!r}")
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise DurationError(f"expected an ISO 8601 timestamp, got {value!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
