"""The sink used when the push sink is off (USE_METRICSD=false) and no other is chosen: each
flushed stat is one JSON line on standard output, in gostats' logging sink format (one line,
wrapped here)::

    {"level":"debug","ts":1700000000.123456,"logger":"gostats.loggingsink",
     "msg":"flushing counter","json":{"name":"ratelimit.service.config_load_success",
     "type":"counter","value":"1.000000"}}

and ``"msg":"flushing all stats"`` ends each flush. As upstream, the lines are written only
when LOG_LEVEL is ``debug`` (or ``trace``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import TextIO

from handlers.ratelimit.sinks.base import Tags, serialize_tags
from handlers.ratelimit.stats import TimerSamples


class StdoutSink:
    """gostats' logging sink, on ``stream`` (standard output by default)."""

    def __init__(
        self,
        extra_tags: Tags = (),
        *,
        stream: TextIO | None = None,
        enabled: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._stream = stream
        self._enabled = enabled
        self._extra_tags = tuple(extra_tags)
        self._clock = clock

    def _write(self, name: str, kind: str, value: float) -> None:
        if not self._enabled:
            return
        fields = {"type": kind, "value": f"{value:f}"}
        if name:
            fields["name"] = serialize_tags(name, self._extra_tags)
        line = (
            f'{{"level":"debug","ts":{self._clock():.6f},"logger":"gostats.loggingsink",'
            f'"msg":{json.dumps("flushing " + kind)},'
            f'"json":{json.dumps(fields, sort_keys=True, separators=(",", ":"))}}}\n'
        )
        (self._stream or sys.stdout).write(line)

    def counter(self, name: str, delta: int) -> None:
        self._write(name, "counter", delta)

    def gauge(self, name: str, value: int) -> None:
        self._write(name, "gauge", value)

    def timer(self, name: str, samples: TimerSamples) -> None:
        for milliseconds in samples.samples_ms:
            self._write(name, "timer", milliseconds)

    def flush(self) -> None:
        self._write("", "all stats", 0)
        if self._enabled:
            (self._stream or sys.stdout).flush()

    def close(self) -> None:
        return None
