"""Log lines in the upstream's two formats, and LOG_LEVEL / LOG_FORMAT through the entry point's
set-up (``handlers.common.entry.run_service``)."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator

import pytest

from handlers.common.entry import run_service
from handlers.common.logs import JsonFormatter, TextFormatter, timestamp
from handlers.ratelimit import logs
from handlers.ratelimit.settings import Settings


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


# --- LOG_LEVEL and LOG_FORMAT ------------------------------------------------------------------

STARTUP = logging.getLogger("ratelimit.startup")
OTHER = logging.getLogger("ratelimit.service")


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level, startup_level = list(root.handlers), root.level, STARTUP.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
    STARTUP.setLevel(startup_level)


def run_with(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> Settings:
    """The settings ``ratelimit``'s entry point gives ``serve`` with ``env``, logging set up."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    served: list[Settings] = []

    def serve(settings: Settings) -> int:
        served.append(settings)
        return 0

    assert run_service(Settings, serve) == 0
    return served[0]


def test_upstream_defaults_warn_and_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LOG_LEVEL", raising=False)
    monkeypatch.delenv("LOG_FORMAT", raising=False)
    settings = run_with(monkeypatch, {})
    assert (settings.log_level, settings.log_format) == ("WARNING", "text")
    assert logging.getLogger().level == logging.WARNING
    OTHER.info("not shown")
    OTHER.warning("shown")
    STARTUP.info("Listening for gRPC on ':8081'")  # announcements show at any level
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" level=")[1] for line in lines] == [
        "warning msg=shown",
        "info msg=\"Listening for gRPC on ':8081'\"",
    ]


@pytest.mark.parametrize(
    ("text", "level", "number"),
    [
        ("WARN", "WARNING", logging.WARNING),
        ("warn", "WARNING", logging.WARNING),
        ("warning", "WARNING", logging.WARNING),
        ("TRACE", "DEBUG", logging.DEBUG),
        ("debug", "DEBUG", logging.DEBUG),
        ("Info", "INFO", logging.INFO),
        ("error", "ERROR", logging.ERROR),
    ],
)
def test_log_levels(monkeypatch: pytest.MonkeyPatch, text: str, level: str, number: int) -> None:
    settings = run_with(monkeypatch, {"LOG_LEVEL": text})
    assert settings.log_level == level
    assert logging.getLogger().level == number
    assert STARTUP.level == min(logging.INFO, number)


def test_log_format_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = run_with(monkeypatch, {"LOG_FORMAT": "json", "LOG_LEVEL": "info"})
    assert settings.log_format == "json"
    OTHER.info("loaded domain 'edge'")
    line = json.loads(capsys.readouterr().err)
    assert (line["@message"], line["level"]) == ("loaded domain 'edge'", "info")


def test_log_format_plain(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_with(monkeypatch, {"LOG_FORMAT": "plain"})
    OTHER.warning("shown")
    assert capsys.readouterr().err.rstrip().endswith(" WARNING ratelimit.service shown")


def test_worker_processes_set_logging_up_alike(capsys: pytest.CaptureFixture[str]) -> None:
    assert Settings.always_logged == logs.ALWAYS_SHOWN
    logs.configure("ERROR", "json")
    OTHER.warning("not shown")
    STARTUP.info("shown")
    assert json.loads(capsys.readouterr().err)["@message"] == "shown"
