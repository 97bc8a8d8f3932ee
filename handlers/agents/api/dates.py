"""Date bounds of the workflow executions list: ISO-8601 or ``now()`` / ``now()±<n><unit>``.

Every value the spec's pattern allows is answered: a timestamp is read by its parts, so a day
past its month's end rolls over (``2026-02-30`` is 2 March) and times beyond the calendar's
ends are clamped to them; only values outside the pattern are a 400.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from webrest import BadRequest, ErrorDetail

__all__ = ["parse_date_bound"]

_RELATIVE = re.compile(r"^now\(\)\s*(?:([-+])\s*(\d{1,9})\s*([smhdw]))?$")
_TIMESTAMP = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
    r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?$"
)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_EARLIEST = datetime.min.replace(tzinfo=UTC)
_LATEST = datetime.max.replace(tzinfo=UTC)


def _shifted(moment: datetime, seconds: float) -> datetime:
    try:
        return moment + timedelta(seconds=seconds)
    except OverflowError:
        return _LATEST if seconds > 0 else _EARLIEST


def _timestamp(match: re.Match[str]) -> datetime | None:
    year, month, day, hour, minute, second, fraction, _, sign, off_h, off_m = match.groups()
    if not 1 <= int(month) <= 12:
        return None
    start = datetime(max(int(year), 1), int(month), 1, tzinfo=UTC)
    seconds: float = (int(day) - 1) * 86400 + int(hour or 0) * 3600 + int(minute or 0) * 60
    seconds += int(second or 0) + (float("0." + fraction) if fraction else 0.0)
    if sign is not None:
        offset = int(off_h) * 3600 + int(off_m) * 60
        seconds += -offset if sign == "+" else offset
    return _shifted(start, seconds)


def parse_date_bound(value: str, field: str, now: datetime | None = None) -> datetime:
    """``value`` as an aware UTC time: an ISO-8601 timestamp (UTC when it has no offset) or a
    relative expression such as ``now()-7d`` (units s, m, h, d, w); a 400 naming
    ``query.<field>`` otherwise."""
    text = value.strip()
    relative = _RELATIVE.match(text)
    if relative:
        sign, amount, unit = relative.groups()
        moment = now or datetime.now(UTC)
        if amount is None:
            return moment
        seconds = int(amount) * _UNITS[unit]
        return _shifted(moment, -seconds if sign == "-" else seconds)
    timestamp = _TIMESTAMP.match(text)
    parsed = _timestamp(timestamp) if timestamp else None
    if parsed is not None:
        return parsed
    message = (
        f"{field} must be an ISO-8601 timestamp or now(), now()-<n><unit> (unit s, m, h, d, w)"
    )
    raise BadRequest(message, [ErrorDetail(("query", field), message, "value_error", value)])
