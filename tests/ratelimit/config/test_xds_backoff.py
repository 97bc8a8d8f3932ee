"""The waits between xDS stream attempts: the linear retry interval, then the exponential
backoff with its multiplier, cap and jitter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from handlers.ratelimit.config.xds_backoff import ReconnectBackoff
from handlers.ratelimit.settings import XdsSettings


def draws(*values: float) -> Iterator[float]:
    yield from values


def backoff(settings: XdsSettings, *values: float) -> ReconnectBackoff:
    source = draws(*values)
    return ReconnectBackoff(settings, lambda: next(source))


def test_first_retry_waits_the_retry_interval_then_the_exponential_backoff_grows_to_max() -> None:
    settings = XdsSettings(
        connect_retry_interval=1.0,
        backoff_initial_interval=2.0,
        backoff_max_interval=10.0,
        backoff_random_factor=3.0,
        backoff_jitter=False,
    )
    waits = backoff(settings, *[0.5] * 5)
    assert [waits.next_delay() for _ in range(5)] == [1.0, 2.0, 6.0, 10.0, 10.0]


def test_reset_starts_over() -> None:
    settings = XdsSettings(
        connect_retry_interval=1.0,
        backoff_initial_interval=2.0,
        backoff_max_interval=10.0,
        backoff_random_factor=3.0,
        backoff_jitter=False,
    )
    waits = backoff(settings, *[0.5] * 4)
    assert [waits.next_delay(), waits.next_delay()] == [1.0, 2.0]
    waits.reset()
    assert [waits.next_delay(), waits.next_delay()] == [1.0, 2.0]


def test_retry_interval_has_fifty_percent_jitter() -> None:
    settings = XdsSettings(connect_retry_interval=2.0)
    assert backoff(settings, 0.0).next_delay() == pytest.approx(1.0)
    assert backoff(settings, 0.999999).next_delay() == pytest.approx(3.0, rel=1e-5)


def test_upstream_defaults_shrink_towards_the_retry_interval() -> None:
    """RANDOM_FACTOR 0.5 is upstream's multiplier: 10 s, 5 s, then the 3 s retry interval."""
    waits = backoff(XdsSettings(backoff_jitter=False), *[0.5] * 5)
    assert [waits.next_delay() for _ in range(5)] == [3.0, 10.0, 5.0, 3.0, 3.0]


def test_jitter_spreads_the_exponential_wait_by_the_random_factor() -> None:
    settings = XdsSettings(
        connect_retry_interval=0.001,
        backoff_initial_interval=10.0,
        backoff_max_interval=60.0,
        backoff_random_factor=0.5,
    )
    # draws: the first retry's linear jitter, then the second's linear and exponential
    low = backoff(settings, 0.5, 0.5, 0.0)
    low.next_delay()
    assert low.next_delay() == pytest.approx(5.0)
    high = backoff(settings, 0.5, 0.5, 0.999999)
    high.next_delay()
    assert high.next_delay() == pytest.approx(15.0, rel=1e-5)
    # a factor above 1 spreads by at most +/-100 %
    wide = backoff(
        XdsSettings(connect_retry_interval=0.001, backoff_random_factor=3.0), 0.5, 0.5, 0.0
    )
    wide.next_delay()
    assert wide.next_delay() == pytest.approx(0.001, abs=0.001)
