"""Log lines as the upstream writes them: ``time=... level=... msg=...`` (LOG_FORMAT=text)
or one JSON object per line with ``@timestamp``, ``@message`` and ``level`` (json)."""

from __future__ import annotations

import json
import logging
import sys
import time

_LEVELS = {
    "TRACE": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
}
_NAMES = {
    logging.DEBUG: "debug",
    logging.INFO: "info",
    logging.WARNING: "warning",
    logging.ERROR: "error",
    logging.CRITICAL: "fatal",
}


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


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        level = _NAMES.get(record.levelno, record.levelname.lower())
        return f"time={_quote(timestamp(record.created))} level={level} msg={_quote(message)}"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        return json.dumps(
            {
                "@message": message,
                "@timestamp": timestamp(record.created),
                "level": _NAMES.get(record.levelno, record.levelname.lower()),
            },
            ensure_ascii=False,
        )


def configure(level: str, log_format: str) -> None:
    """Send the service's logs to standard error in the chosen format and level."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    chosen = _LEVELS.get(level.upper(), logging.WARNING)
    root.setLevel(chosen)
    # the announcements of listeners, loaded domains and reloads are shown at any level (and
    # the startup logger's debug lines at debug)
    logging.getLogger("ratelimit.startup").setLevel(min(logging.INFO, chosen))
