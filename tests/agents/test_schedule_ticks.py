"""Cron expressions and time zones of schedules: what is accepted, and which ticks they name
(UTC instants), across daylight saving time changes."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from handlers.agents.domain.schedule_ticks import Cron, ScheduleSpecError, parse_cron, time_zone

NOW = datetime(2026, 1, 1, 12, 0, 0, 500000, tzinfo=UTC)


def _cron(expression: str, zone: str = "UTC") -> Cron:
    return parse_cron(expression, time_zone(zone), NOW)


def _utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def _ticks(cron: Cron, after: datetime, count: int) -> list[datetime]:
    ticks = []
    for _ in range(count):
        tick = cron.next_after(after)
        assert tick is not None
        ticks.append(tick)
        after = tick
    return ticks


def test_five_fields_six_with_leading_seconds_and_aliases_are_accepted() -> None:
    assert _cron("  */15   9-17 * * mon-fri ").expression == "*/15 9-17 * * mon-fri"
    assert _ticks(_cron("0 9-17 * * mon-fri"), _utc(2026, 1, 2, 16, 50), 2) == [
        _utc(2026, 1, 2, 17, 0),  # a Friday
        _utc(2026, 1, 5, 9, 0),  # then Monday
    ]
    seconds = _cron("*/20 * * * * *")
    assert _ticks(seconds, _utc(2026, 1, 1, 0, 0, 50), 3) == [
        _utc(2026, 1, 1, 0, 1, 0),
        _utc(2026, 1, 1, 0, 1, 20),
        _utc(2026, 1, 1, 0, 1, 40),
    ]
    daily = _cron("@Daily")
    assert daily.expression == "@daily"
    assert daily.next_after(NOW) == _utc(2026, 1, 2)
    assert _cron("0 0 L * *").next_after(NOW) == _utc(2026, 1, 31)  # croniter's last day
    # both day fields restricted: either matches (Vixie cron)
    assert _ticks(_cron("0 0 13 * fri"), _utc(2026, 2, 1), 3) == [
        _utc(2026, 2, 6), _utc(2026, 2, 13), _utc(2026, 2, 20),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("61 * * * *", "out of range"),
        ("* * * *", "expected 5 fields (minute hour day-of-month month day-of-week), 6 with"),
        ("* * * * * * *", "got 7 fields"),
        ("@reboot", "got 1 field"),
        ("H * * * *", "random (R) and hashed (H) fields are not supported"),
        ("R 1 * * *", "random (R) and hashed (H) fields are not supported"),
        ("1,,2 * * * *", "is not acceptable"),
        ("*/0 * * * *", "step '0'"),
        ("0 0 31 2 *", "never fires"),
        ("", "got 0 fields"),
    ],
)
def test_bad_expressions_say_why(expression: str, reason: str) -> None:
    with pytest.raises(ScheduleSpecError, match="cron expression") as caught:
        _cron(expression)
    assert reason in str(caught.value)
    assert repr(expression) in str(caught.value)


def test_time_zones_are_iana_names() -> None:
    assert time_zone("America/Argentina/Buenos_Aires").key == "America/Argentina/Buenos_Aires"
    assert time_zone("UTC").key == "UTC"
    for name in ("utc", "Mars/Olympus", "../../etc/passwd", "localtime", "", "Europe/"):
        with pytest.raises(ScheduleSpecError, match="Unknown time zone"):
            time_zone(name)


def test_fields_are_read_in_the_time_zone() -> None:
    tokyo = _cron("0 9 * * *", "Asia/Tokyo")
    assert tokyo.next_after(NOW) == _utc(2026, 1, 2, 0, 0)  # 09:00 in Tokyo is 00:00 UTC
    new_year = _cron("0 0 1 1 *", "America/New_York")
    assert new_year.next_after(NOW) == _utc(2027, 1, 1, 5, 0)


def test_next_is_strictly_after_and_latest_is_at_or_before() -> None:
    minutely = _cron("* * * * *")
    tick = _utc(2026, 1, 1, 12, 0)
    assert minutely.next_after(tick) == tick + timedelta(minutes=1)
    assert minutely.next_after(tick - timedelta(microseconds=1)) == tick
    assert minutely.latest_at(tick) == tick
    assert minutely.latest_at(tick + timedelta(seconds=59, microseconds=999999)) == tick
    assert minutely.latest_at(tick - timedelta(microseconds=1)) == tick - timedelta(minutes=1)
    # the latest of many missed ticks, found at once
    every_second = _cron("* * * * * *")
    later = tick + timedelta(days=30, microseconds=700000)
    assert every_second.latest_at(later) == tick + timedelta(days=30)


def test_a_tick_in_the_hour_skipped_by_dst_runs_at_the_end_of_the_gap() -> None:
    # Europe/Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC)
    nightly = _cron("30 2 * * *", "Europe/Berlin")
    assert _ticks(nightly, _utc(2026, 3, 27, 12), 3) == [
        _utc(2026, 3, 28, 1, 30),  # 02:30 CET
        _utc(2026, 3, 29, 1, 0),  # 02:30 does not exist: 03:00 CEST
        _utc(2026, 3, 30, 0, 30),  # 02:30 CEST
    ]
    hourly = _cron("0 * * * *", "Europe/Berlin")
    assert _ticks(hourly, _utc(2026, 3, 28, 23, 30), 3) == [
        _utc(2026, 3, 29, 0, 0),  # 01:00 CET
        _utc(2026, 3, 29, 1, 0),  # 03:00 CEST: no 02:00 that day, no double tick
        _utc(2026, 3, 29, 2, 0),
    ]


def test_a_local_time_repeated_by_dst_is_two_ticks() -> None:
    # Europe/Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00 UTC); 02:30 happens twice
    nightly = _cron("30 2 * * *", "Europe/Berlin")
    assert _ticks(nightly, _utc(2026, 10, 24, 12), 3) == [
        _utc(2026, 10, 25, 0, 30),  # 02:30 CEST
        _utc(2026, 10, 25, 1, 30),  # 02:30 CET
        _utc(2026, 10, 26, 1, 30),
    ]
    # America/New_York, 2026-11-01: 01:00-02:00 happens twice
    hourly = _cron("0 * * * *", "America/New_York")
    assert _ticks(hourly, _utc(2026, 11, 1, 4, 30), 3) == [
        _utc(2026, 11, 1, 5, 0),  # 01:00 EDT
        _utc(2026, 11, 1, 6, 0),  # 01:00 EST
        _utc(2026, 11, 1, 7, 0),  # 02:00 EST
    ]


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York", "Australia/Sydney"])
@pytest.mark.parametrize("expression", ["30 2 * * *", "0 * * * *", "*/20 1-3 * * *"])
def test_latest_and_next_agree_across_dst(zone: str, expression: str) -> None:
    """What a restarted scheduler computes (the latest tick at a time, the tick after it) is
    the same sequence as stepping tick by tick, through both changes of the year."""
    cron = _cron(expression, zone)
    for start in (_utc(2026, 3, 27), _utc(2026, 4, 3), _utc(2026, 10, 23), _utc(2026, 10, 3)):
        ticks = _ticks(cron, start, 40)
        assert ticks == sorted(set(ticks))
        for previous, tick in itertools.pairwise(ticks):
            assert cron.latest_at(tick) == tick
            assert cron.latest_at(tick - timedelta(seconds=1)) == previous
            assert cron.next_after(previous + timedelta(seconds=1)) == tick
