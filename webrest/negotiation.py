"""Choosing the response media type from the ``Accept`` header (RFC 9110 §12.5.1)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["negotiate", "parse_media_type"]

_CACHE: dict[tuple[str, tuple[str, ...]], str | None] = {}
_CACHE_LIMIT = 512


def parse_media_type(value: str) -> tuple[str, dict[str, str]]:
    """``"Application/JSON; charset=UTF-8"`` → ``("application/json", {"charset": "UTF-8"})``."""
    mime, _, rest = value.partition(";")
    params: dict[str, str] = {}
    if rest:
        for item in rest.split(";"):
            key, sep, val = item.partition("=")
            if sep:
                params[key.strip().lower()] = val.strip().strip('"')
    return mime.strip().lower(), params


def _parse_accept(accept: str) -> list[tuple[str, str, float, int]]:
    entries: list[tuple[str, str, float, int]] = []
    for position, item in enumerate(accept.split(",")):
        mime, params = parse_media_type(item)
        if not mime:
            continue
        main, _, sub = mime.partition("/")
        try:
            quality = float(params.get("q", "1"))
        except ValueError:
            quality = 0.0
        if not quality >= 0.0:  # negative, or NaN: not acceptable
            quality = 0.0
        entries.append((main, sub or "*", min(quality, 1.0), position))
    return entries


def _choose(accept: str, offered: Sequence[str]) -> str | None:
    entries = _parse_accept(accept)
    best: tuple[float, int, int, int] | None = None
    chosen: str | None = None
    for order, mime in enumerate(offered):
        main, _, sub = mime.partition("/")
        match: tuple[float, int, int] | None = None  # quality, specificity, -position
        for a_main, a_sub, quality, position in entries:
            if a_main == main and a_sub == sub:
                specificity = 2
            elif a_main == main and a_sub == "*":
                specificity = 1
            elif a_main == "*":
                specificity = 0
            else:
                continue
            if match is None or (specificity, -position) > (match[1], match[2]):
                match = (quality, specificity, -position)
        if match is None or match[0] <= 0.0:
            continue
        rank = (match[0], match[1], match[2], -order)
        if best is None or rank > best:
            best, chosen = rank, mime
    return chosen


def negotiate(accept: str | None, offered: Sequence[str]) -> str | None:
    """The offered media type the client prefers most, or ``None`` when none is acceptable.

    A missing or empty ``Accept`` accepts anything: the first offered type wins. Among types
    of equal quality, the more specific match, then the earlier ``Accept`` entry, then the
    earlier offered type wins.
    """
    if not accept or not offered:
        return offered[0] if offered else None
    key = (accept, tuple(offered))
    try:
        return _CACHE[key]
    except KeyError:
        pass
    chosen = _choose(accept, offered)
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[key] = chosen
    return chosen
