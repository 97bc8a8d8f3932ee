"""Stat names: upstream's sanitizing of rule keys and domains (reference §5)."""

from __future__ import annotations

import pytest

from handlers.ratelimit.stats import MAX_PENDING_SAMPLES, Timer, sanitize
from tests.ratelimit.conftest import descriptor, harness, request

RULES = """
domain: edge:v1
descriptors:
  - key: remote_address
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: path
    value_to_metric: true
    rate_limit: {unit: minute, requests_per_unit: 10}
"""


@pytest.mark.parametrize(
    ("name", "sanitized"),
    [
        ("remote_address_10.0.0.1", "remote_address_10_0_0_1"),
        ("path_/foo:bar|baz", "path_/foo_bar_baz"),
        ("host_a.b.example", "host_a.b.example"),  # only the dots of IPv4 addresses
        ("ip_1.2.3.4.5", "ip_1_2_3_4.5"),
    ],
)
def test_sanitize(name: str, sanitized: str) -> None:
    assert sanitize(name) == sanitized


async def test_rule_stats_are_named_with_sanitized_keys() -> None:
    h = harness(RULES)
    await h.service.should_rate_limit(
        request(
            "edge:v1",
            descriptor(("remote_address", "10.0.0.1")),
            descriptor(("path", "/foo:bar|baz")),
        )
    )
    counters = h.stats.store.counters()
    assert counters["ratelimit.service.rate_limit.edge_v1.remote_address_10_0_0_1.total_hits"] == 1
    assert counters["ratelimit.service.rate_limit.edge_v1.path_/foo_bar_baz.total_hits"] == 1
    assert not [name for name in counters if "10.0.0.1" in name or ":" in name or "|" in name]


def test_a_timer_keeps_exact_totals_and_a_uniform_sample_once_its_reservoir_is_full() -> None:
    timer = Timer("t")
    recorded = 10 * MAX_PENDING_SAMPLES
    for value in range(recorded):
        timer.record(float(value))
    drained = timer.drain()
    assert (drained.count, drained.total_ms) == (recorded, sum(range(recorded)))
    assert len(drained.samples_ms) == MAX_PENDING_SAMPLES
    # each tenth of the recorded values holds about a tenth of the sample (binomial: 410 ± 19)
    tenths = [0] * 10
    for sample in drained.samples_ms:
        tenths[int(sample) * 10 // recorded] += 1
    assert all(300 < kept < 520 for kept in tenths), tenths
    assert timer.drain().samples_ms == [] and timer.count == recorded
