"""Statistics sinks: where the in-memory statistics (:mod:`handlers.ratelimit.stats`) go.

One sink at a time, as the settings choose: statsd push (METRICSD), DogStatsD with tags and
mogrifiers (TAGGED_METRICSD), a Prometheus pull endpoint (PULLMETRICS), JSON lines on standard
output (push sink off), or none (DISABLE_STATS). :class:`StatsReporting` runs it.
"""

from __future__ import annotations

from handlers.ratelimit.sinks.reporting import StatsReporting, create_sink

__all__ = ["StatsReporting", "create_sink"]
