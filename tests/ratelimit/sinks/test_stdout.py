"""The stdout sink (push sink off): gostats' logging sink lines, only at debug level."""

from __future__ import annotations

import io
import json

from handlers.ratelimit.settings import Settings
from handlers.ratelimit.sinks import create_sink
from handlers.ratelimit.sinks.flusher import StatsFlusher
from handlers.ratelimit.sinks.sources import LocalStats
from handlers.ratelimit.sinks.stdout import StdoutSink
from handlers.ratelimit.stats import StatsStore


def test_push_sink_off_chooses_stdout() -> None:
    settings = Settings.from_env({"USE_METRICSD": "false"})
    assert settings.stats.sink == "stdout"
    assert isinstance(create_sink(settings.stats), StdoutSink)


def test_lines_in_gostats_format() -> None:
    out = io.StringIO()
    store = StatsStore()
    flusher = StatsFlusher(
        LocalStats(store), StdoutSink([("app", "rl")], stream=out, clock=lambda: 1700000000.5)
    )
    store.counter("ratelimit.service.config_load_success").add(2)
    store.gauge("ratelimit.localcache.entryCount").set(3)
    store.timer("ratelimit_server.Check.response_time").record(0.5)
    flusher.flush()
    lines = out.getvalue().splitlines()
    head = '{"level":"debug","ts":1700000000.500000,"logger":"gostats.loggingsink",'
    assert lines == [
        head + '"msg":"flushing counter","json":{"name":"ratelimit.service.config_load_success'
        '.__app=rl","type":"counter","value":"2.000000"}}',
        head + '"msg":"flushing gauge","json":{"name":"ratelimit.localcache.entryCount.__app=rl",'
        '"type":"gauge","value":"3.000000"}}',
        head + '"msg":"flushing timer","json":{"name":"ratelimit_server.Check.response_time'
        '.__app=rl","type":"timer","value":"0.500000"}}',
        head + '"msg":"flushing all stats","json":{"type":"all stats","value":"0.000000"}}',
    ]
    assert all(json.loads(line)["level"] == "debug" for line in lines)


def test_nothing_written_unless_debug_level() -> None:
    out = io.StringIO()
    store = StatsStore()
    store.counter("x").add()
    StatsFlusher(LocalStats(store), StdoutSink(stream=out, enabled=False)).flush()
    assert out.getvalue() == ""
