"""Periodic tasks: enqueued by the scheduler once per tick of a cron schedule or an
interval, exactly once however many schedulers race or fail over.

Each tick's task gets an id made of the periodic's name and the tick's time, so
a second enqueue of the same tick is refused by the store as a duplicate: at
most once by construction. The leader enqueues every tick that fell in the last
``lookback`` seconds and was not enqueued yet, so a tick that fell during a
failover still runs; older ones are skipped rather than replayed in a storm.
Ticks are computed on the store's clock, which all schedulers share.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from croniter import croniter

from tenure.checks import seconds as check_seconds
from tenure.errors import DuplicateTask, InvalidInput, StoreError
from tenure.store import Store

if TYPE_CHECKING:
    from tenure.function import TaskFunction

log = logging.getLogger("tenure.scheduler")


@dataclass(frozen=True)
class Periodic:
    """A task to enqueue on a schedule: a cron expression or every N seconds."""

    function: TaskFunction[Any, Any]
    schedule: str | float
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    name: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.function.name)
        if isinstance(self.schedule, str):
            if not croniter.is_valid(self.schedule):
                raise InvalidInput("schedule", f"not a valid cron expression: {self.schedule!r}")
        else:
            every = check_seconds(self.schedule, "schedule")
            if every < 1:
                raise InvalidInput("schedule", "an interval must be at least 1 second")
        self.function.new_task(self.args, self.kwargs)  # the call must fit, now

    def ticks(self, after: datetime, until: datetime) -> Iterator[datetime]:
        """Every tick in ``(after, until]``, oldest first."""
        if isinstance(self.schedule, str):
            times = croniter(self.schedule, after.astimezone(UTC))
            while (tick := times.get_next(datetime)) <= until:
                yield tick.astimezone(UTC)
            return
        every = float(self.schedule)
        n = math.floor(after.timestamp() / every) + 1
        while (at := n * every) <= until.timestamp():
            yield datetime.fromtimestamp(at, UTC)
            n += 1

    def recent_ticks(self, now: datetime, count: int) -> list[datetime]:
        """The last ``count`` ticks at or before ``now``, newest first."""
        if isinstance(self.schedule, str):
            times = croniter(self.schedule, now.astimezone(UTC) + timedelta(seconds=1))
            found = [times.get_prev(datetime).astimezone(UTC) for _ in range(count)]
            return [tick for tick in found if tick <= now]
        every = float(self.schedule)
        last = math.floor(now.timestamp() / every)
        return [datetime.fromtimestamp((last - n) * every, UTC) for n in range(count)]

    @property
    def id_prefix(self) -> str:
        """What the id of each of its tasks begins with."""
        return f"periodic:{self.name}:"

    def task_id(self, tick: datetime) -> str:
        return f"{self.id_prefix}{tick.astimezone(UTC).isoformat(timespec='seconds')}"


RECENT_TICKS = 20
"""Ticks a periodic task's state looks back over for the last one enqueued."""


@dataclass(frozen=True)
class PeriodicState:
    """Where a periodic task stands: its next tick after now, and the id of the
    last task it enqueued among its :data:`RECENT_TICKS` latest ticks (``None``
    if none of them was)."""

    periodic: Periodic
    next_tick: datetime | None
    last_task_id: str | None


def periodic_states(periodics: list[Periodic], store: Store) -> list[PeriodicState]:
    """The state of each periodic task, on the store's clock (what ``tenure
    periodic`` and the dashboard show). Each tick's task has a known id, so the
    last one is found by exact ids, newest first: a lookup by index however
    many tasks the store holds."""
    now = store.clock_now()
    states = []
    for periodic in periodics:
        upcoming = next(periodic.ticks(now, now + timedelta(days=400)), None)
        recent = (periodic.task_id(tick) for tick in periodic.recent_ticks(now, RECENT_TICKS))
        last = next((task_id for task_id in recent if store.task_get(task_id)), None)
        states.append(PeriodicState(periodic, upcoming, last))
    return states


class PeriodicEnqueuer:
    """The scheduler step that enqueues due ticks."""

    def __init__(self, periodics: list[Periodic], *, lookback: float = 60.0) -> None:
        names = [p.name for p in periodics]
        if len(set(names)) != len(names):
            raise InvalidInput("periodic", "two periodic tasks have the same name")
        self.periodics = periodics
        self.lookback = timedelta(seconds=lookback)
        self._last: dict[str, datetime] = {}

    def reset(self) -> None:
        """Forget what was enqueued (a new term of leadership starts from the store)."""
        self._last.clear()

    def run_once(self, store: Store) -> int:
        """Enqueue the ticks that are due; return how many tasks were created."""
        now = store.clock_now()
        created = 0
        for periodic in self.periodics:
            since = max(self._last.get(periodic.name, now - self.lookback), now - self.lookback)
            for tick in periodic.ticks(since, now):
                created += self._enqueue(store, periodic, tick)
                self._last[periodic.name] = tick
        return created

    def _enqueue(self, store: Store, periodic: Periodic, tick: datetime) -> int:
        new = periodic.function.new_task(periodic.args, periodic.kwargs)
        try:
            store.task_create(replace(new, id=periodic.task_id(tick)))
        except DuplicateTask:
            return 0  # another scheduler, or an earlier term, enqueued this tick
        except StoreError as exc:
            log.warning("periodic %s at %s not enqueued yet: %s", periodic.name, tick, exc)
            raise
        log.info("periodic %s enqueued for %s", periodic.name, tick.isoformat())
        return 1
