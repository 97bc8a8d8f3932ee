"""The services' logging set-up: one line per event, on stderr, in one of three formats.

Every service takes the same ``LOG_LEVEL`` (``DEBUG``, ``INFO``, ``WARNING``/``WARN``,
``ERROR``; ``TRACE`` is ``DEBUG``) and ``LOG_FORMAT``:

* ``plain``: ``2026-11-26 02:15:55,123 INFO agents.server agents-server listening on …``;
* ``text``: ``time=2026-11-26T02:15:55.123456789Z level=info msg="…"`` (logfmt, as the Go rate
  limit service writes with logrus: the rate limit service's default);
* ``json``: ``{"@message": "…", "@timestamp": "…", "level": "info"}``, one object per line (the
  Go service's ``LOG_FORMAT=json``).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterable

__all__ = ["PLAIN_FORMAT", "JsonFormatter", "TextFormatter", "configure_logging", "timestamp"]

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
"""Time, level, logger, message."""

_NAMES = {
    logging.DEBUG: "debug",
    logging.INFO: "info",
    logging.WARNING: "warning",
    logging.ERROR: "error",
    logging.CRITICAL: "fatal",
}
_LEVELS = {"TRACE": logging.DEBUG, "WARN": logging.WARNING}


def timestamp(created: float) -> str:
    """RFC 3339 with nanoseconds, UTC."""
    seconds = int(created)
    nanos = round((created - seconds) * 1e9)
    if nanos >= 1_000_000_000:
        seconds, nanos = seconds + 1, nanos - 1_000_000_000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{nanos:09d}Z"


def _quote(text: str) -> str:
    if text and all(c.isalnum() or c in "-._/@^+:" for c in text):
        return text
    return json.dumps(text, ensure_ascii=False)


def _message(formatter: logging.Formatter, record: logging.LogRecord) -> str:
    message = record.getMessage()
    if record.exc_info:
        message += "\n" + formatter.formatException(record.exc_info)
    return message


class TextFormatter(logging.Formatter):
    """``time=… level=… msg=…`` (logfmt)."""

    def format(self, record: logging.LogRecord) -> str:
        level = _NAMES.get(record.levelno, record.levelname.lower())
        message = _message(self, record)
        return f"time={_quote(timestamp(record.created))} level={level} msg={_quote(message)}"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``@message``, ``@timestamp``, ``level``."""

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(
            {
                "@message": _message(self, record),
                "@timestamp": timestamp(record.created),
                "level": _NAMES.get(record.levelno, record.levelname.lower()),
            },
            ensure_ascii=False,
        )


def configure_logging(
    level: str, log_format: str = "plain", *, always_shown: Iterable[str] = ()
) -> None:
    """Log records of ``level`` and above to stderr in ``log_format`` (``plain``, ``text`` or
    ``json``), replacing any earlier set-up. The loggers named in ``always_shown`` (start-up
    announcements) log at INFO whatever the level."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    elif log_format == "text":
        handler.setFormatter(TextFormatter())
    else:
        handler.setFormatter(logging.Formatter(PLAIN_FORMAT))
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    chosen = _LEVELS.get(level.upper(), logging.getLevelName(level.upper()))
    if not isinstance(chosen, int):
        chosen = logging.WARNING
    root.setLevel(chosen)
    for name in always_shown:
        logging.getLogger(name).setLevel(min(logging.INFO, chosen))
