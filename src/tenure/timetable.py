"""When a schedule ticks: a cron expression read in a time zone, or a fixed
interval, as the moments (in UTC) it falls on.

It is its own module because three places must agree on it to the second: the
scheduler that enqueues each tick once, the store that checks a schedule before
keeping it, and ``tenure periodic`` and the dashboard that show the next tick.

Daylight saving follows the rule of Vixie cron (the cron of most Linux
systems). When the clocks go forward, a time that does not exist that day runs
at the first moment after the jump (a job at 02:30 runs at 03:00), once. When
they go back, a job at a fixed hour runs at the first of the two moments its
wall time names, not twice; a job whose hour field begins with ``*`` (``*``,
``*/2``: every hour or every few hours) keeps running on real time through the
repeated hour.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from croniter import CroniterError, croniter

from tenure.checks import seconds as check_seconds
from tenure.errors import InvalidInput

HORIZON = timedelta(days=400)
"""How far ahead a next tick is looked for: a cron that names 29 February may
have none within it."""

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
"""The named expressions cron knows, and what each stands for."""


@dataclass(frozen=True)
class Timetable:
    """A cron expression (``"0 9 * * *"``, read in ``tz``, UTC by default) or
    an interval in seconds (at least 1), aligned on the Unix epoch so every
    scheduler computes the same ticks."""

    schedule: str | float
    tz: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.schedule, str):
            expression = MACROS.get(self.schedule.strip().lower(), self.schedule)
            if expression.startswith("@") or not croniter.is_valid(expression):
                raise InvalidInput("schedule", f"not a valid cron expression: {self.schedule!r}")
            zone(self.tz)
            try:  # a date that never comes (30 February) is found now, not at each tick
                croniter(expression, datetime(2000, 1, 1, tzinfo=UTC)).get_next(datetime)
            except CroniterError:
                raise InvalidInput(
                    "schedule", f"{self.schedule!r} names no date that comes"
                ) from None
            return
        every = check_seconds(self.schedule, "schedule")
        if every < 1:
            raise InvalidInput("schedule", "an interval must be at least 1 second")
        if self.tz is not None:
            raise InvalidInput("tz", "a time zone applies to a cron expression, not an interval")
        object.__setattr__(self, "schedule", float(every))

    def ticks(self, after: datetime, until: datetime) -> Iterator[datetime]:
        """Every tick in ``(after, until]``, oldest first, in UTC."""
        if isinstance(self.schedule, str):
            yield from self._cron_ticks(self.schedule, after, until)
            return
        every = float(self.schedule)
        n = math.floor(after.timestamp() / every) + 1
        while (at := n * every) <= until.timestamp():
            yield datetime.fromtimestamp(at, UTC)
            n += 1

    def next_tick(self, after: datetime) -> datetime | None:
        """The first tick after ``after`` (within :data:`HORIZON`), if any."""
        return next(self.ticks(after, after + HORIZON), None)

    def describe(self) -> str:
        """How people read it: ``every 5 s``, or the expression and its zone."""
        if isinstance(self.schedule, str):
            return f"{self.schedule} ({self.tz or 'UTC'})"
        return f"every {_seconds(float(self.schedule))}"

    def _cron_ticks(self, given: str, after: datetime, until: datetime) -> Iterator[datetime]:
        place = zone(self.tz)
        expression = MACROS.get(given.strip().lower(), given)
        fixed_hour = not expression.split()[1].startswith("*")
        times = croniter(expression, after.astimezone(place))
        try:
            while (tick := times.get_next(datetime).astimezone(UTC)) <= until:
                if fixed_hour and tick.astimezone(place).fold == 1:
                    continue  # the repeated hour: this wall time has run already
                yield tick
        except CroniterError:  # no date within croniter's own search
            return


@cache
def zones() -> frozenset[str]:
    """The IANA time zone names this machine knows: the ones a schedule may
    name (and the HTTP API's document lists)."""
    return frozenset(available_timezones())


def zone(name: str | None) -> tzinfo:
    """The IANA time zone ``name`` (UTC when ``None``): one of :func:`zones`,
    not any file ``ZoneInfo`` would open (``posixrules``, ``right/UTC``)."""
    if name is None:
        return UTC
    if not isinstance(name, str) or not name or "\x00" in name:
        raise InvalidInput("tz", "must be an IANA time zone name, such as 'Europe/Berlin'")
    if name not in zones():
        raise InvalidInput(
            "tz", f"unknown time zone {name[:60]!r}: use an IANA name, such as 'Europe/Berlin'"
        )
    return ZoneInfo(name)


def _seconds(every: float) -> str:
    """``30 s``, ``5 min``, ``2 h``, ``1 d``; ``90 s`` stays in seconds."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if every >= size and every % size == 0:
            return f"{int(every // size)} {unit}"
    return f"{every:g} s"
