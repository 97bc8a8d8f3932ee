"""Log lines in the upstream's two formats."""

from __future__ import annotations

import json
import logging
import re

from handlers.ratelimit.logs import JsonFormatter, TextFormatter, timestamp


def record(message: str, level: int = logging.WARNING) -> logging.LogRecord:
    made = logging.LogRecord("ratelimit", level, __file__, 1, message, None, None)
    made.created = 1_700_000_000.123456789
    return made


def test_text_format() -> None:
    line = TextFormatter().format(record("Listening for HTTP on ':8080'"))
    assert re.fullmatch(
        r'time=2023-11-14T22:13:20\.\d{9}Z level=warning msg="Listening for HTTP on \':8080\'"',
        line,
    )
    assert TextFormatter().format(record("ok", logging.INFO)).endswith("level=info msg=ok")


def test_json_format() -> None:
    line = json.loads(JsonFormatter().format(record("loaded", logging.DEBUG)))
    assert line == {"@message": "loaded", "@timestamp": line["@timestamp"], "level": "debug"}
    assert re.fullmatch(r"2023-11-14T22:13:20\.\d{9}Z", line["@timestamp"])


def test_timestamp_has_nanoseconds() -> None:
    assert timestamp(0.5) == "1970-01-01T00:00:00.500000000Z"
