"""Parameter formats pydantic's lax parsing would widen."""

from __future__ import annotations

import re

from pydantic import BeforeValidator

__all__ = ["RFC3339"]

_DATE_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})"
)


def _date_time(value: object) -> object:
    """A ``format: date-time`` value must be an RFC 3339 date-time: pydantic alone would also
    take ``0.5`` (a Unix time), a bare date or a time without an offset."""
    if isinstance(value, str) and not _DATE_TIME.fullmatch(value):
        raise ValueError("Input should be an RFC 3339 date-time, e.g. 2026-05-14T09:30:00Z")
    return value


RFC3339 = BeforeValidator(_date_time)
"""Annotated metadata of ``datetime.datetime`` parameters generated from ``format: date-time``."""
