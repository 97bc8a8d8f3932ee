"""The statistics settings: defaults, upstream aliases, sink choice and validation errors."""

from __future__ import annotations

import pytest

from handlers.ratelimit.settings import MogrifierSettings, Settings, SettingsError, StatsSettings
from handlers.ratelimit.sinks import StatsReporting
from handlers.ratelimit.stats import StatsStore


def test_defaults() -> None:
    s = Settings.from_env({})
    assert s.stats == StatsSettings()
    assert (s.stats.sink, s.stats.metricsd_host, s.stats.metricsd_port) == (
        "metricsd",
        "localhost",
        8125,
    )
    assert (s.stats.flush_interval, s.stats.pullmetrics_host, s.stats.pullmetrics_port) == (
        10.0,
        "0.0.0.0",
        9090,
    )
    assert (s.debug_host, s.debug_port) == ("0.0.0.0", 6070)


def test_seed_names_and_upstream_aliases() -> None:
    seed = Settings.from_env(
        {
            "METRICSD_HOST": "stats",
            "METRICSD_PORT": "9125",
            "STATS_FLUSH_INTERVAL": "500ms",
            "EXTRA_TAGS": "a:1, b:2",
            "USE_PULLMETRICS": "true",
            "PULLMETRICS_ADDR": ":9102",
            "PULLMETRICS_PATH": "/m",
        }
    ).stats
    upstream = Settings.from_env(
        {
            "STATSD_HOST": "stats",
            "STATSD_PORT": "9125",
            "STATS_FLUSH_INTERVAL": "500ms",
            "EXTRA_TAGS": "a:1,b:2",
            "USE_STATSD": "false",
            "USE_PROMETHEUS": "true",
            "PROMETHEUS_ADDR": ":9102",
            "PROMETHEUS_PATH": "/m",
        }
    ).stats
    assert seed == upstream
    assert seed.sink == "pullmetrics"
    assert seed.extra_tags == (("a", "1"), ("b", "2"))
    assert (seed.pullmetrics_host, seed.pullmetrics_port, seed.flush_interval) == (
        "0.0.0.0",
        9102,
        0.5,
    )


def test_mogrifiers_from_upstream_names() -> None:
    s = Settings.from_env(
        {
            "USE_DOG_STATSD": "true",
            "DOG_STATSD_MOGRIFIERS": "A",
            "DOG_STATSD_MOGRIFIER_A_PATTERN": r"^x\.(\w+)$",
            "DOG_STATSD_MOGRIFIER_A_NAME": "x",
            "DOG_STATSD_MOGRIFIER_A_TAGS": "k:$1",
        }
    ).stats
    assert s.sink == "tagged_metricsd"
    assert s.mogrifiers == (MogrifierSettings("A", r"^x\.(\w+)$", "x", (("k", "$1"),)),)


def test_disable_stats_wins_and_reports_nothing() -> None:
    s = Settings.from_env({"DISABLE_STATS": "true", "USE_PULLMETRICS": "true"}).stats
    assert s.sink == "none"
    reporting = StatsReporting(s, StatsStore())
    assert reporting.sink is None and reporting.flusher is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"USE_METRICSD": "true", "USE_PULLMETRICS": "true"},
            "unable to use more than one stats sink at the same time: USE_METRICSD and "
            "USE_PULLMETRICS are true",
        ),
        (
            {"USE_TAGGED_METRICSD": "true", "USE_PULLMETRICS": "true"},
            "USE_TAGGED_METRICSD and USE_PULLMETRICS are true",
        ),
        ({"STATS_FLUSH_INTERVAL": "0s"}, "STATS_FLUSH_INTERVAL must be a positive duration"),
        ({"STATS_FLUSH_INTERVAL": "soon"}, "STATS_FLUSH_INTERVAL='soon' is invalid"),
        ({"METRICSD_PORT": "0"}, "METRICSD_PORT='0' is invalid"),
        ({"EXTRA_TAGS": "a:1,b"}, "EXTRA_TAGS='a:1,b' is invalid: expected a comma-separated"),
        ({"PULLMETRICS_ADDR": "9090"}, "PULLMETRICS_ADDR='9090' is invalid"),
        ({"PULLMETRICS_PATH": "metrics"}, "PULLMETRICS_PATH='metrics' is invalid"),
        ({"DEBUG_PORT": "70000"}, "DEBUG_PORT='70000' is invalid"),
        ({"TAGGED_METRICSD_MOGRIFIERS": "a-b"}, "TAGGED_METRICSD_MOGRIFIERS='a-b' is invalid"),
        (
            {"TAGGED_METRICSD_MOGRIFIERS": "M"},
            "TAGGED_METRICSD_MOGRIFIER_M_PATTERN is not set",
        ),
        (
            {"TAGGED_METRICSD_MOGRIFIERS": "M", "TAGGED_METRICSD_MOGRIFIER_M_PATTERN": "("},
            "TAGGED_METRICSD_MOGRIFIER_M_PATTERN='(' is invalid",
        ),
        (
            {"TAGGED_METRICSD_MOGRIFIERS": "M", "TAGGED_METRICSD_MOGRIFIER_M_PATTERN": "(a)"},
            "TAGGED_METRICSD_MOGRIFIER_M_NAME is not set",
        ),
        (
            {
                "TAGGED_METRICSD_MOGRIFIERS": "M",
                "TAGGED_METRICSD_MOGRIFIER_M_PATTERN": "(a)",
                "TAGGED_METRICSD_MOGRIFIER_M_NAME": "n",
                "TAGGED_METRICSD_MOGRIFIER_M_TAGS": "k:$2",
            },
            "TAGGED_METRICSD_MOGRIFIER_M_TAGS refers to $2 but "
            "TAGGED_METRICSD_MOGRIFIER_M_PATTERN has 1 groups",
        ),
    ],
)
def test_invalid_settings_are_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as error:
        Settings.from_env(env)
    assert message in str(error.value)
