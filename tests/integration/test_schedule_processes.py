"""Schedules added at run time, with real scheduler processes: two schedulers
race, the leader is SIGKILLed, and a schedule added while they run fires on
whichever leads, each tick once; a paused one does not fire until resumed, and
then only from its resumption."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

from tenure import Store
from tenure.maintenance.schedules import Schedules
from tenure.store import TaskFilter
from tests.apps import periodic
from tests.integration.workers import WorkerProcess, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def schedulers(store_url: str) -> Iterator[list[WorkerProcess]]:
    started = [
        WorkerProcess(
            store_url,
            "--interval",
            "0.2",
            "--leader-lease",
            "2",
            app="tests.apps.periodic:app",
            command="scheduler",
            ready="standing by",
        )
        for _ in range(2)
    ]
    yield started
    for process in started:
        process.stop()


def ticks_of(store: Store, name: str) -> list[datetime]:
    prefix = f"periodic:{name}:"
    tasks = store.task_list(TaskFilter(topic="ticks"), limit=10_000).tasks
    mine = [t.id.removeprefix(prefix) for t in tasks if t.id.startswith(prefix)]
    return sorted(datetime.fromisoformat(moment) for moment in mine)


def test_a_schedule_added_at_run_time_fires_on_the_leader_and_a_paused_one_waits(
    store: Store, schedulers: list[WorkerProcess]
) -> None:
    schedules = Schedules(lambda: store, periodic.app.registry, periodic.app.periodics)
    task = "tests.apps.periodic.every_second"
    wait_for(lambda: store.leader_get("scheduler") is not None, "a leader")
    added_at = store.clock_now()
    schedules.add("added", task, 1)
    schedules.add("held", task, 1)
    schedules.pause("held")
    wait_for(lambda: len(ticks_of(store, "added")) >= 3, "three ticks of the added schedule")
    # The leader dies; the other takes over and goes on with the same schedule.
    state = store.leader_get("scheduler")
    assert state is not None and state.owner is not None
    [leader] = [s for s in schedulers if s.pid == int(state.owner.split(":")[1])]
    leader.process.kill()
    killed = store.clock_now()
    wait_for(
        lambda: sum(t > killed for t in ticks_of(store, "added")) >= 2,
        "ticks after the failover",
        timeout=30,
    )
    assert ticks_of(store, "held") == []
    before_resume = store.clock_now()
    resumed = schedules.resume("held")
    wait_for(lambda: len(ticks_of(store, "held")) >= 2, "ticks of the resumed schedule")
    for process in schedulers:
        process.stop()
    added = ticks_of(store, "added")
    seconds = [tick.timestamp() for tick in added]
    # Every second from the first tick to the last, once: none missed in the
    # failover (caught up from the tick the store kept), none twice.
    assert seconds == [seconds[0] + n for n in range(len(seconds))], added
    assert added[0] > added_at
    # Paused for several seconds: none of those ticks was enqueued on resuming.
    assert resumed.last_tick is None and ticks_of(store, "held")[0] > before_resume
