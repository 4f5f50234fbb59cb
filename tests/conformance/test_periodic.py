"""Periodic tasks on each store: the scheduler's step enqueues each tick once,
from the tick the store keeps; a first start enqueues nothing from before it, a
failover catches up what it missed within ``catch_up``, a paused schedule waits,
and a schedule added at run time runs beside the declared ones. Time is given
to each step, so daylight-saving days are walked hour by hour."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tenure import App, InvalidInput, ScheduleConflict, Store
from tenure.maintenance.periodic import (
    GRACE,
    MAX_TICKS_PER_STEP,
    Periodic,
    PeriodicEnqueuer,
    task_id,
)
from tenure.maintenance.schedules import Schedules
from tenure.store import Schedule, ScheduleSpec
from tenure.timetable import Timetable


@pytest.fixture
def app(store_url: str) -> Iterator[App]:
    built = App(store_url)

    @built.task(name="tick", topic="ticks")
    def tick(n: int = 0) -> None:
        """Enqueued by the schedules below."""

    yield built
    built.close()


def enqueuer(app: App, *periodics: Periodic) -> PeriodicEnqueuer:
    return PeriodicEnqueuer(list(periodics), app.registry.get)


def every(app: App, seconds: float, **options: object) -> Periodic:
    return Periodic(app.lookup("tick"), seconds, name=f"every-{seconds:g}", **options)  # type: ignore[arg-type]


def created_ids(store: Store) -> list[str]:
    return sorted(t.id for t in store.task_list(limit=1000).tasks)


def test_a_first_start_enqueues_no_tick_from_before_it(app: App) -> None:
    store = app.store
    periodic = every(app, 1)
    created = enqueuer(app, periodic).run_once(store)
    [stored] = store.schedule_list()
    # Only ticks after the schedule was stored; the old step enqueued every
    # tick of its 60 s lookback, 60 tasks for a one-second schedule.
    assert created <= 2
    first_ticks = [t.id for t in store.task_list(limit=10).tasks]
    assert all(tid > task_id(periodic.name, stored.created_at) for tid in first_ticks)


def test_a_failover_catches_up_the_missed_ticks_once(app: App) -> None:
    store = app.store
    periodic = every(app, 60)
    before = store.clock_now()
    store.schedule_declare([periodic.spec], now=before - timedelta(minutes=5))
    created = enqueuer(app, periodic).run_once(store) + enqueuer(app, periodic).run_once(store)
    after = store.clock_now()
    missed = periodic.timetable.ticks(before - timedelta(minutes=5), before)
    possible = periodic.timetable.ticks(before - timedelta(minutes=5), after)
    expected = [task_id(periodic.name, tick) for tick in missed]
    assert len(expected) == 5
    ids = created_ids(store)
    assert ids[: len(expected)] == expected and len(ids) == created
    assert len(ids) <= len(list(possible))


def test_ticks_older_than_catch_up_are_skipped(app: App) -> None:
    store = app.store
    periodic = every(app, 60, catch_up=600)
    now = store.clock_now()
    store.schedule_declare([periodic.spec], now=now - timedelta(hours=3))
    created = enqueuer(app, periodic).run_once(store, now=now)
    assert created == len(list(periodic.timetable.ticks(now - timedelta(seconds=600), now)))
    assert created_ids(store)[0] > task_id(periodic.name, now - timedelta(seconds=601))


class Stale:
    """A store whose schedule list is the one read before: what a scheduler
    that read it just before another enqueued works from."""

    def __init__(self, store: Store) -> None:
        self.store, self.listed = store, store.schedule_list()

    def schedule_list(self) -> list[Schedule]:
        return self.listed

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_racing_enqueuers_create_each_tick_once(app: App) -> None:
    store = app.store
    periodic = every(app, 1)
    start = store.clock_now() - timedelta(seconds=30)
    store.schedule_declare([periodic.spec], now=start)
    first, second = (enqueuer(app, periodic) for _ in range(2))
    for racer in (first, second):
        racer.run_once(store, now=start)  # each has stored the declarations
    stale = Stale(store)  # the second read the schedule before the first enqueued
    now = store.clock_now()
    created = first.run_once(store, now=now)
    assert second.run_once(stale, now=now) == 0  # type: ignore[arg-type]
    assert created == len(list(periodic.timetable.ticks(start, now))) == len(created_ids(store))


def test_a_tick_whose_task_exists_is_spent_and_the_next_ones_still_enqueued(app: App) -> None:
    store = app.store
    periodic = every(app, 60)
    start = datetime(2030, 1, 1, 12, tzinfo=UTC)
    store.schedule_declare([periodic.spec], now=start)
    taken = start + timedelta(minutes=1)  # enqueued by a scheduler of an older version
    app.lookup("tick").options(id=task_id(periodic.name, taken)).enqueue()
    created = enqueuer(app, periodic).run_once(store, now=start + timedelta(minutes=5))
    assert created == 4 and len(created_ids(store)) == 5


def test_a_long_gap_is_caught_up_over_several_steps(app: App) -> None:
    store = app.store
    periodic = every(app, 1, catch_up=3600)
    start = datetime(2030, 1, 1, 12, tzinfo=UTC)
    store.schedule_declare([periodic.spec], now=start)
    step, now = enqueuer(app, periodic), start + timedelta(seconds=250)
    assert [step.run_once(store, now=now) for _ in range(4)] == [MAX_TICKS_PER_STEP] * 2 + [50, 0]


def test_a_zero_catch_up_still_enqueues_a_tick_a_late_step_finds(app: App) -> None:
    store = app.store
    periodic = every(app, 10, catch_up=0)
    start = datetime(2030, 1, 1, 12, tzinfo=UTC)
    store.schedule_declare([periodic.spec], now=start)
    step = enqueuer(app, periodic)
    # The step after the tick comes 25 s late: within the grace, it is enqueued.
    assert step.run_once(store, now=start + timedelta(seconds=35)) == 3
    # After an hour away, only the last minute's ticks are.
    later = start + timedelta(hours=1, seconds=35)
    assert step.run_once(store, now=later) == int(GRACE // 10)


def test_a_schedule_that_no_longer_fits_its_task_leaves_the_others_running(app: App) -> None:
    store = app.store
    start = store.clock_now() - timedelta(minutes=3)
    store.schedule_add(ScheduleSpec("misfit", "tick", 60, args=(1, 2, 3)), now=start)
    store.schedule_add(ScheduleSpec("fine", "tick", 60), now=start)
    assert enqueuer(app).run_once(store) == 3
    assert all(t.id.startswith("periodic:fine:") for t in store.task_list(limit=10).tasks)


def test_a_paused_schedule_waits_and_resumes_from_then(app: App) -> None:
    store = app.store
    periodic = every(app, 60)
    start = store.clock_now() - timedelta(minutes=10)
    store.schedule_declare([periodic.spec], now=start)
    app.schedules.pause(periodic.name)
    step = enqueuer(app, periodic)
    assert step.run_once(store, now=start + timedelta(minutes=10)) == 0
    resumed = app.schedules.resume(periodic.name)
    assert resumed.last_tick is None and resumed.next_tick is not None
    assert step.run_once(store) <= 1  # at most a tick that fell after the resume
    assert created_ids(store) == [] or created_ids(store)[0] > task_id(periodic.name, start)


def test_a_schedule_added_at_run_time_runs_with_its_arguments(app: App) -> None:
    store = app.store
    start = store.clock_now() - timedelta(minutes=3)
    store.schedule_add(ScheduleSpec("nightly", "tick", 60, kwargs={"n": 7}), now=start)
    store.schedule_add(ScheduleSpec("unknown", "not.registered", 60), now=start)
    assert enqueuer(app).run_once(store) == 3  # the unknown task's ticks wait
    tasks = store.task_list(limit=10).tasks
    assert {t.name for t in tasks} == {"tick"}
    assert all(t.data == {"args": [], "kwargs": {"n": 7}} for t in tasks)
    unknown = store.schedule_get("unknown")
    assert unknown is not None and unknown.last_tick == start


def test_a_schedule_no_longer_declared_is_not_enqueued(app: App) -> None:
    store = app.store
    gone = every(app, 60)
    store.schedule_declare([gone.spec], now=store.clock_now() - timedelta(minutes=3))
    assert enqueuer(app).run_once(store) == 0
    [state] = app.schedules.all()
    assert (state.name, state.origin, state.declared) == (gone.name, "code", False)
    app.schedules.remove(gone.name)  # no longer declared: it may go
    assert store.schedule_list() == []


def test_a_declared_schedule_removed_from_the_store_is_stored_again(app: App) -> None:
    store = app.store
    kept = every(app, 60)
    step = enqueuer(app, kept)
    step.run_once(store)
    with pytest.raises(ScheduleConflict, match="declared in code"):
        Schedules(lambda: store, app.registry, [kept]).remove(kept.name)
    store.schedule_remove(kept.name)
    step.run_once(store)  # the same term: it stores it again, from now
    [again] = store.schedule_list()
    assert again.name == kept.name and again.origin == "code"


def walk(app: App, periodic: Periodic, start: datetime, hours: int) -> list[datetime]:
    """Step the scheduler every 10 minutes for ``hours`` from ``start``: the
    ticks enqueued, in UTC."""
    store = app.store
    store.schedule_declare([periodic.spec], now=start)
    step = enqueuer(app, periodic)
    for n in range(hours * 6 + 1):
        step.run_once(store, now=start + timedelta(minutes=10 * n))
    prefix = f"periodic:{periodic.name}:"
    mine = [i.removeprefix(prefix) for i in created_ids(store) if i.startswith(prefix)]
    return sorted(datetime.fromisoformat(moment) for moment in mine)


@pytest.mark.parametrize(
    ("start", "nine_am", "half_past_two"),
    [  # the clocks go forward on 29 March 2026, back on 25 October 2026
        (
            datetime(2026, 3, 27, 12, tzinfo=UTC),
            ["03-28 08:00", "03-29 07:00", "03-30 07:00"],
            ["03-28 01:30", "03-29 01:00", "03-30 00:30"],  # 02:30 is 03:00 that day
        ),
        (
            datetime(2026, 10, 23, 12, tzinfo=UTC),
            ["10-24 07:00", "10-25 08:00", "10-26 08:00"],
            ["10-24 00:30", "10-25 00:30", "10-26 01:30"],  # once, not twice
        ),
    ],
)
def test_a_cron_in_a_daylight_saving_zone_fires_once_at_local_times(
    app: App, start: datetime, nine_am: list[str], half_past_two: list[str]
) -> None:
    tick = app.lookup("tick")
    berlin = {"tz": "Europe/Berlin", "catch_up": 3600.0}
    morning = Periodic(tick, "0 9 * * *", name="morning", **berlin)  # type: ignore[arg-type]
    night = Periodic(tick, "30 2 * * *", name="night", **berlin)  # type: ignore[arg-type]
    assert [f"{t:%m-%d %H:%M}" for t in walk(app, morning, start, 80)] == nine_am
    assert [f"{t:%m-%d %H:%M}" for t in walk(app, night, start, 80)] == half_past_two


def test_an_hourly_cron_keeps_real_time_through_the_repeated_hour() -> None:
    hourly = Timetable("0 * * * *", "Europe/Berlin")
    start = datetime(2026, 10, 24, 23, 30, tzinfo=UTC)
    ticks = list(hourly.ticks(start, start + timedelta(hours=4)))
    assert [f"{t:%H:%M}" for t in ticks] == ["00:00", "01:00", "02:00", "03:00"]


def test_interval_ticks_are_aligned_and_described() -> None:
    start = datetime(2030, 1, 1, tzinfo=UTC)
    assert list(Timetable(15).ticks(start, start + timedelta(seconds=46))) == [
        start + timedelta(seconds=s) for s in (15, 30, 45)
    ]
    described = [Timetable(s).describe() for s in (30, 90, 300, 7200, 86400)]
    assert described == ["every 30 s", "every 90 s", "every 5 min", "every 2 h", "every 1 d"]
    assert Timetable("0 9 * * 1-5", "Europe/Berlin").describe() == "0 9 * * 1-5 (Europe/Berlin)"
    assert Timetable("0 9 29 2 *").next_tick(start) is None  # 29 February 2032: too far


def test_cron_names_are_read_and_dates_that_never_come_refused() -> None:
    start = datetime(2030, 1, 1, 10, tzinfo=UTC)
    assert Timetable("@daily").next_tick(start) == datetime(2030, 1, 2, tzinfo=UTC)
    assert Timetable("@hourly", "Asia/Kolkata").next_tick(start) == start.replace(minute=30)
    for never in ("0 0 30 2 *", "@reboot"):
        with pytest.raises(InvalidInput, match="schedule"):
            Timetable(never)
    for zone in ("America", "x" * 300, "../etc/passwd"):
        with pytest.raises(InvalidInput, match="tz"):
            Timetable("0 9 * * *", zone)


def test_an_hour_field_that_begins_with_a_star_keeps_real_time_on_the_repeated_hour() -> None:
    start = datetime(2026, 10, 24, 23, 30, tzinfo=UTC)  # Berlin goes back at 01:00 UTC
    hourly = Timetable("30 */1 * * *", "Europe/Berlin")
    ticks = [f"{t:%H:%M}" for t in hourly.ticks(start, start + timedelta(hours=4))]
    assert ticks == ["00:30", "01:30", "02:30", "03:30"]  # 02:30 local twice: both run
