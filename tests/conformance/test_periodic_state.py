"""Where each periodic task stands (``tenure periodic``, the dashboard): its
next tick, and the last tick it enqueued, found by the ticks' exact ids."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tenure import App
from tenure.maintenance.periodic import RECENT_TICKS, Periodic, periodic_states


@pytest.fixture
def app(store_url: str) -> App:
    built = App(store_url)

    @built.task(name="tick", topic="ticks")
    def tick() -> None:
        """Enqueued by the schedules below."""

    built.periodic(60, name="every-minute")(tick)
    built.periodic("*/5 * * * *", name="every-five")(tick)
    built.periodic(30, name="never-ran")(tick)
    return built


def test_recent_ticks_are_the_latest_at_or_before_now() -> None:
    app = App("sqlite:///:unused:")
    function = app.task(name="t")(lambda: None)
    now = datetime(2026, 11, 23, 10, 7, 30, tzinfo=UTC)
    assert Periodic(function, 60).recent_ticks(now, 3) == [
        now.replace(second=0) - timedelta(minutes=n) for n in range(3)
    ]
    cron = Periodic(function, "*/5 * * * *").recent_ticks(now, 3)
    assert cron == [now.replace(minute=m, second=0) for m in (5, 0)] + [
        now.replace(hour=9, minute=55, second=0)
    ]
    on_the_tick = now.replace(minute=5, second=0)
    assert Periodic(function, "*/5 * * * *").recent_ticks(on_the_tick, 1) == [on_the_tick]


def test_the_last_enqueued_tick_and_the_next(app: App) -> None:
    now = app.store.clock_now()
    by_name = {p.name: p for p in app.periodics}
    enqueued = {}
    for name, back in (("every-minute", 2), ("every-five", 0)):
        periodic = by_name[name]
        tick = periodic.recent_ticks(now, back + 1)[back]
        enqueued[name] = periodic.task_id(tick)
        periodic.function.options(id=enqueued[name]).enqueue()
    too_old = by_name["never-ran"]
    ancient = too_old.recent_ticks(now, RECENT_TICKS + 1)[-1]
    too_old.function.options(id=too_old.task_id(ancient)).enqueue()
    states = {s.periodic.name: s for s in periodic_states(app.periodics, app.store)}
    assert {name: states[name].last_task_id for name in enqueued} == enqueued
    assert states["never-ran"].last_task_id is None  # only the recent ticks are looked at
    for state in states.values():
        assert state.next_tick is not None
        assert now < state.next_tick <= now + timedelta(minutes=5)
    app.close()
