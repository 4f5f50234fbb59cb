"""Periodic tasks: enqueued by the elected scheduler once per tick of a cron
schedule (in a time zone) or an interval, exactly once however many schedulers
race or fail over.

Every schedule lives in the store (:mod:`tenure.store.schedules`): those
declared in code with ``@app.periodic``, which the scheduler stores at the
start of each term, and those added at run time (``app.schedules``). Each keeps
the newest tick it enqueued, moved in the transaction that enqueues the tick's
task, so:

- a first start enqueues nothing from before it (a schedule starts from the
  moment it is stored);
- a failover resumes from the last tick the store saw, and enqueues the ticks
  missed in between, up to the schedule's ``catch_up`` seconds back; older ones
  are skipped, not replayed in a storm;
- two schedulers that race enqueue each tick once (the tick's move is a
  compare-and-set, and its task's id is made of the schedule's name and the
  tick's time, which the store also refuses twice).

Ticks are computed on the store's clock, which all schedulers share.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from tenure.errors import InvalidInput, StoreError
from tenure.store import Store
from tenure.store.schedules import DEFAULT_CATCH_UP, Origin, Schedule, ScheduleSpec, check_spec
from tenure.timetable import Timetable

if TYPE_CHECKING:
    from tenure.function import TaskFunction

log = logging.getLogger("tenure.scheduler")

Lookup = Callable[[str], "TaskFunction[Any, Any] | None"]
"""The registered function of a task name, or ``None`` if it is unknown here."""


@dataclass(frozen=True)
class Periodic:
    """A task declared in code to enqueue on a schedule: a cron expression
    (read in ``tz``) or every N seconds."""

    function: TaskFunction[Any, Any]
    schedule: str | float
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    tz: str | None = None
    catch_up: float = DEFAULT_CATCH_UP

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.function.name)
        check_spec(self.spec, "periodic")
        self.function.new_task(self.args, self.kwargs)  # the call must fit, now

    @property
    def spec(self) -> ScheduleSpec:
        """What the store keeps of it."""
        return ScheduleSpec(
            self.name, self.function.name, self.schedule, self.tz,
            self.args, self.kwargs, self.catch_up,
        )  # fmt: skip

    @property
    def timetable(self) -> Timetable:
        return Timetable(self.schedule, self.tz)


def task_id(name: str, tick: datetime) -> str:
    """The id of the task schedule ``name`` enqueues for ``tick``."""
    return f"periodic:{name}:{tick.astimezone(UTC).isoformat(timespec='seconds')}"


GRACE = 60.0
"""Seconds back a step always enqueues ticks, whatever a schedule's
``catch_up`` says: a step that comes late (a slow cycle, a short failover)
still enqueues the tick that just fell."""

MAX_TICKS_PER_STEP = 100
"""Most ticks of one schedule one step enqueues: a long gap is caught up over
several steps, and supervision and the other schedules run in between."""


@dataclass(frozen=True)
class PeriodicState:
    """Where a schedule stands, as ``tenure periodic`` and the dashboard show
    it: its next tick (``None`` while paused, or none within 400 days), and
    the newest tick it enqueued, with its task's id (``None`` if none yet).
    ``declared`` is false for a schedule stored from code that this App no
    longer declares (it is not enqueued), and ``None`` when that is unknown
    (no App was given)."""

    spec: ScheduleSpec
    origin: Origin
    declared: bool | None
    paused: bool
    next_tick: datetime | None
    last_tick: datetime | None
    last_task_id: str | None

    @property
    def name(self) -> str:
        return self.spec.name


def periodic_states(periodics: list[Periodic] | None, store: Store) -> list[PeriodicState]:
    """The state of every schedule, stored or declared by ``periodics``, by
    name, on the store's clock (``periodics`` ``None``: the App is unknown)."""
    now = store.clock_now()
    declared = {p.name for p in periodics or ()}
    states = [
        state_of(s, _declared(s, declared if periodics is not None else None), now)
        for s in store.schedule_list()
    ]
    stored = {state.name for state in states}
    for periodic in periodics or ():
        if periodic.name not in stored:  # not stored until a scheduler has led
            nxt = periodic.timetable.next_tick(now)
            states.append(PeriodicState(periodic.spec, "code", True, False, nxt, None, None))
    return sorted(states, key=lambda state: state.name)


def _declared(schedule: Schedule, names: set[str] | None) -> bool | None:
    if schedule.origin == "store":
        return True
    return None if names is None else schedule.name in names


def state_of(schedule: Schedule, declared: bool | None, now: datetime) -> PeriodicState:
    """What ``schedule`` stands as, at ``now``. Its last enqueued tick is read
    from its last task's id, which names it: the stored last tick also moves
    on a resume or a new timing, without a task."""
    last = schedule.last_task_id
    upcoming = None if schedule.paused else schedule.spec.timetable.next_tick(now)
    return PeriodicState(
        schedule.spec, schedule.origin, declared, schedule.paused, upcoming,
        None if last is None else tick_of(last), last,
    )  # fmt: skip


def tick_of(periodic_task_id: str) -> datetime | None:
    """The tick a periodic task was enqueued for: its id ends with it, as
    :func:`task_id` writes it (``2026-01-01T02:00:00+00:00``, 25 characters)."""
    try:
        return datetime.fromisoformat(periodic_task_id[-25:])
    except ValueError:
        return None


class PeriodicEnqueuer:
    """The scheduler step that enqueues due ticks."""

    def __init__(self, periodics: list[Periodic], lookup: Lookup | None = None) -> None:
        names = [p.name for p in periodics]
        if len(set(names)) != len(names):
            raise InvalidInput("periodic", "two periodic tasks have the same name")
        self.periodics = {p.name: p for p in periodics}
        self.lookup: Lookup = lookup or (lambda name: None)
        self._declared = False
        self._told: set[tuple[str, str]] = set()

    def reset(self) -> None:
        """A new term of leadership: store the declared schedules again (and
        say again what is wrong with any)."""
        self._declared = False
        self._told.clear()

    def run_once(self, store: Store, *, now: datetime | None = None) -> int:
        """Enqueue the ticks due by ``now`` (the store's clock by default);
        return how many tasks were created."""
        if not self._declared:
            store.schedule_declare([p.spec for p in self.periodics.values()], now=now)
            self._declared = True
        stored = store.schedule_list()
        missing = self.periodics.keys() - {schedule.name for schedule in stored}
        if missing:  # removed at run time while still declared: stored again, from now
            store.schedule_declare([self.periodics[name].spec for name in sorted(missing)], now=now)
            stored = store.schedule_list()
        now = now or store.clock_now()
        created = 0
        for schedule in stored:
            function = None if schedule.paused else self._function(schedule)
            if function is None:
                continue
            try:
                created += self._catch_up(store, schedule, function, now)
            except StoreError:
                raise  # the step fails, and is tried again next cycle
            except Exception as exc:  # one bad schedule must not stop the others
                self._tell(schedule.name, f"refused {type(exc).__name__}",
                           "schedule %s not enqueued: %s", schedule.name, exc)  # fmt: skip
        return created

    def _function(self, schedule: Schedule) -> TaskFunction[Any, Any] | None:
        """What a schedule enqueues, if it runs here: a code schedule this App
        declares, or a run-time one whose task this App knows."""
        name = schedule.name
        if schedule.origin == "code":
            periodic = self.periodics.get(name)
            return None if periodic is None else periodic.function
        if name in self.periodics:
            self._tell(name, "clash", "periodic %s: a schedule added at run time has its name; "
                       "that one runs, not the one declared in code", name)  # fmt: skip
        function = self.lookup(schedule.spec.task)
        if function is None:
            self._tell(name, "unknown", "schedule %s names task %r, unknown to this scheduler; "
                       "its ticks wait (up to catch_up) for one that knows it", name,
                       schedule.spec.task)  # fmt: skip
        return function

    def _catch_up(
        self, store: Store, schedule: Schedule, function: TaskFunction[Any, Any], now: datetime
    ) -> int:
        spec = schedule.spec
        back = timedelta(seconds=max(spec.catch_up, GRACE))
        since = max(schedule.last_tick, now - back)
        first = (
            None if since == schedule.last_tick else spec.timetable.next_tick(schedule.last_tick)
        )
        if first is not None and first <= since:  # only past a gap: not each cycle
            self._tell(spec.name, "skip",
                       "periodic %s: ticks from %s to %s skipped (older than catch_up, %s s)",
                       spec.name, schedule.last_tick.isoformat(), since.isoformat(),
                       spec.catch_up)  # fmt: skip
        created = 0
        for tick in itertools.islice(spec.timetable.ticks(since, now), MAX_TICKS_PER_STEP):
            new = replace(function.new_task(spec.args, spec.kwargs), id=task_id(spec.name, tick))
            # None: paused, removed, taken by another scheduler, or spent on a
            # task that exists; the compare-and-set refuses the rest alike.
            if store.schedule_tick(spec.name, tick, new) is not None:
                log.info("periodic %s enqueued for %s", spec.name, tick.isoformat())
                created += 1
        return created

    def _tell(self, name: str, what: str, message: str, *args: object) -> None:
        """Log ``message`` once per schedule and cause (each step would repeat it)."""
        if (name, what) not in self._told:
            self._told.add((name, what))
            log.warning(message, *args)
