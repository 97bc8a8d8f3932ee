"""The settings model every service shares, its entry point helper and its logging set-up."""

from __future__ import annotations

import json
import logging
from typing import ClassVar

import pytest
from pydantic import AliasChoices, Field, model_validator

from handlers.common.entry import run_service
from handlers.common.logs import configure_logging
from handlers.common.settings import ServiceSettings, SettingsError


class Example(ServiceSettings):
    program: ClassVar[str] = "example"

    port: int = Field(8000, validation_alias=AliasChoices("EXAMPLE_PORT", "OLD_PORT"), ge=1)
    name: str = Field("x", validation_alias="EXAMPLE_NAME")
    low: int = Field(1, validation_alias="EXAMPLE_LOW")
    high: int = Field(2, validation_alias="EXAMPLE_HIGH")

    @model_validator(mode="after")
    def _ordered(self) -> Example:
        if self.low >= self.high:
            raise ValueError(f"EXAMPLE_LOW={self.low} must be below EXAMPLE_HIGH={self.high}")
        return self


def test_variables_aliases_defaults_and_empty_values() -> None:
    assert Example.from_env({}) == Example(port=8000, name="x")
    assert Example.from_env({"OLD_PORT": "9"}).port == 9
    assert Example.from_env({"EXAMPLE_PORT": "7", "OLD_PORT": "9"}).port == 7  # the name wins
    assert Example.from_env({"EXAMPLE_NAME": "", "EXAMPLE_PORT": ""}) == Example()
    assert Example.variable_names("port") == ("EXAMPLE_PORT", "OLD_PORT")


@pytest.mark.parametrize(
    ("level", "normalised"),
    [("warn", "WARNING"), ("WARNING", "WARNING"), ("trace", "DEBUG"), ("Info", "INFO")],
)
def test_log_level_means_the_same_everywhere(level: str, normalised: str) -> None:
    assert Example.from_env({"LOG_LEVEL": level}).log_level == normalised


def test_errors_name_the_variable_that_was_set() -> None:
    cases = {
        ("OLD_PORT", "x"): "OLD_PORT='x' is invalid: ",
        ("EXAMPLE_PORT", "0"): "EXAMPLE_PORT='0' is invalid: ",
        ("LOG_LEVEL", "loud"): "LOG_LEVEL='loud' is invalid: expected one of DEBUG, INFO, "
        "WARNING, ERROR (or WARN, TRACE)",
        ("LOG_FORMAT", "xml"): "LOG_FORMAT='xml' is invalid: expected one of plain, text, json",
    }
    for (name, value), message in cases.items():
        with pytest.raises(SettingsError) as refused:
            Example.from_env({name: value})
        assert str(refused.value).startswith(message), refused.value
    with pytest.raises(SettingsError, match=r"^EXAMPLE_LOW=5 must be below EXAMPLE_HIGH=2$"):
        Example.from_env({"EXAMPLE_LOW": "5"})


def test_an_entry_point_stops_on_invalid_settings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("EXAMPLE_PORT", "many")
    served: list[Example] = []

    assert run_service(Example, lambda settings: served.append(settings) or 0) == 2
    assert served == []
    assert capsys.readouterr().err.startswith("example: EXAMPLE_PORT='many' is invalid: ")

    monkeypatch.setenv("EXAMPLE_PORT", "5")
    monkeypatch.setenv("LOG_FORMAT", "json")
    assert run_service(Example, lambda settings: served.append(settings) or 3) == 3
    assert served[0].port == 5


@pytest.mark.parametrize("log_format", ["plain", "text", "json"])
def test_the_three_log_formats(log_format: str, capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("INFO", log_format)
    try:
        logging.getLogger("example.startup").info("listening on %s", "http://x")
        logging.getLogger("example").debug("not shown")
    finally:
        configure_logging("WARNING", "plain")
    (line,) = capsys.readouterr().err.splitlines()
    if log_format == "json":
        record = json.loads(line)
        assert (record["@message"], record["level"]) == ("listening on http://x", "info")
    elif log_format == "text":
        assert line.startswith("time=") and line.endswith(' level=info msg="listening on http://x"')
    else:
        assert line.endswith(" INFO example.startup listening on http://x")
