"""Cron expressions and time zones of schedules: checking them, and the ticks they name.

Pure functions over :mod:`croniter` and :mod:`zoneinfo`, knowing no database (see README.md,
"Schedules", for the rules they implement):

* **Cron**: five fields (``minute hour day-of-month month day-of-week``), or six with a leading
  *seconds* field, or one of the ``@`` aliases in :data:`ALIASES`. croniter's extensions ``L``
  and ``#`` are accepted; its random and hashed fields (``R``, ``H``) are not (a schedule
  fires at times the expression says). When both day fields are restricted, a day matching
  either fires (Vixie cron's rule).
* **Time zones**: IANA names (``Europe/Berlin``); the fields are read in local time. A tick
  whose local time does not exist (the hour skipped when DST starts) fires at the end of the
  gap; a local time that happens twice (the hour repeated when DST ends) is two ticks, one in
  each offset (croniter's behaviour, kept).
* **Ticks** are whole seconds, compared as UTC instants.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from croniter import CroniterBadDateError, CroniterError, croniter  # type: ignore[import-untyped]

__all__ = ["ALIASES", "DEFAULT_TIMEZONE", "Cron", "ScheduleSpecError", "parse_cron", "time_zone"]

ALIASES = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
DEFAULT_TIMEZONE = "UTC"
FIELDS = "minute hour day-of-month month day-of-week"
_RANDOM_OR_HASHED = re.compile(r"(?<![A-Za-z])[HR](?![A-Za-z])")
_NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})  # the host's, or no real zone


class ScheduleSpecError(ValueError):
    """A cron expression or a time zone that cannot be used; the message says why."""


@cache
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones()) - _NOT_ZONES


def time_zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``; :class:`ScheduleSpecError` when there is none."""
    if name not in _zone_names():
        raise ScheduleSpecError(
            f"Unknown time zone {name!r}: use an IANA name such as 'UTC' or 'Europe/Berlin'"
        )
    return ZoneInfo(name)


@dataclass(frozen=True)
class Cron:
    """A checked cron expression read in a time zone."""

    expression: str
    """The expression, its fields separated by one space."""
    zone: ZoneInfo

    @property
    def _with_seconds(self) -> bool:
        return len(self.expression.split()) == 6

    def _iterator(self, start: datetime) -> croniter:
        return croniter(
            self.expression,
            start.astimezone(self.zone),
            second_at_beginning=self._with_seconds,
        )

    def next_after(self, moment: datetime) -> datetime | None:
        """The first tick strictly after ``moment`` (UTC); ``None`` when there is none."""
        try:
            tick: datetime = self._iterator(moment).get_next(datetime)
        except CroniterBadDateError:
            return None
        return tick.astimezone(UTC)

    def latest_at(self, moment: datetime) -> datetime | None:
        """The last tick at or before ``moment`` (UTC); ``None`` when there is none."""
        whole = moment.replace(microsecond=0) + timedelta(seconds=1)  # ticks are whole seconds
        try:
            tick: datetime = self._iterator(whole).get_prev(datetime)
        except CroniterBadDateError:
            return None
        return tick.astimezone(UTC)


def parse_cron(expression: str, zone: ZoneInfo, now: datetime) -> Cron:
    """``expression`` checked (it must also fire at least once after ``now``); raises
    :class:`ScheduleSpecError` saying what is wrong."""
    fields = expression.split()
    if len(fields) == 1 and fields[0].lower() in ALIASES:
        cron = Cron(fields[0].lower(), zone)
    elif len(fields) in (5, 6):
        if any(_RANDOM_OR_HASHED.search(field) for field in fields):
            raise ScheduleSpecError(
                f"Invalid cron expression {expression!r}: random (R) and hashed (H) fields are "
                "not supported"
            )
        cron = Cron(" ".join(fields), zone)
        try:
            croniter(cron.expression, now, second_at_beginning=len(fields) == 6)
        except (CroniterError, ValueError, KeyError) as error:
            raise ScheduleSpecError(f"Invalid cron expression {expression!r}: {error}") from None
    else:
        raise ScheduleSpecError(
            f"Invalid cron expression {expression!r}: expected 5 fields ({FIELDS}), 6 with a "
            f"leading seconds field, or one of {', '.join(sorted(ALIASES))}; got {len(fields)} "
            "field" + ("" if len(fields) == 1 else "s")
        )
    try:
        fires = cron.next_after(now) is not None
    except (CroniterError, ValueError, KeyError) as error:
        raise ScheduleSpecError(f"Invalid cron expression {expression!r}: {error}") from None
    if not fires:
        raise ScheduleSpecError(f"The cron expression {expression!r} never fires")
    return cron
