"""Schedules kept in the store (Store.schedule_*): declared from code, added,
edited, paused and removed at run time, and each tick moved once, with its task,
by a compare-and-set."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from tenure import InvalidInput, ScheduleExists, ScheduleNotFound
from tenure.store import NewTask, ScheduleSpec, Store

HOURLY = ScheduleSpec("hourly", "jobs.report", "0 * * * *", "Europe/Berlin", (1,), {"k": "v"})
EVERY = ScheduleSpec("every", "jobs.ping", 30)


def tick_task(name: str, suffix: str = "") -> NewTask:
    return NewTask(topic="ticks", name="jobs.ping", id=f"periodic:{name}:{suffix}")


def test_a_declared_schedule_starts_from_now_and_keeps_its_tick_across_declarations(
    store: Store,
) -> None:
    before = store.clock_now()
    store.schedule_declare([HOURLY, EVERY])
    after = store.clock_now()
    first = {s.name: s for s in store.schedule_list()}
    assert list(first) == ["every", "hourly"]  # by name
    hourly = first["hourly"]
    assert (hourly.spec, hourly.origin, hourly.paused) == (HOURLY, "code", False)
    assert before <= hourly.last_tick <= after and hourly.last_task_id is None
    # Declared again unchanged (the next term): nothing is written.
    store.schedule_declare([HOURLY, EVERY])
    assert store.schedule_list() == list(first.values())
    # New arguments: taken, the tick kept. A new timing: the tick starts again.
    store.schedule_declare([replace(HOURLY, args=(2,)), replace(EVERY, schedule=60)])
    now = {s.name: s for s in store.schedule_list()}
    assert now["hourly"].spec.args == (2,) and now["hourly"].last_tick == hourly.last_tick
    assert now["every"].spec.schedule == 60.0 and now["every"].last_tick >= first["every"].last_tick


def test_a_schedule_added_at_run_time_is_not_taken_by_a_declaration(store: Store) -> None:
    added = store.schedule_add(HOURLY)
    assert added.origin == "store" and added.spec == HOURLY
    with pytest.raises(ScheduleExists, match="hourly"):
        store.schedule_add(replace(HOURLY, schedule=5, tz=None))
    store.schedule_declare([replace(HOURLY, task="jobs.other")])
    assert store.schedule_get("hourly") == added
    assert store.schedule_get("missing") is None


def test_a_replaced_timing_starts_again_and_new_arguments_keep_the_tick(store: Store) -> None:
    added = store.schedule_add(EVERY, now=store.clock_now() - timedelta(hours=1))
    kept = store.schedule_replace(replace(EVERY, kwargs={"x": 1}, catch_up=5))
    assert kept.last_tick == added.last_tick and kept.spec.catch_up == 5
    moved = store.schedule_replace(replace(EVERY, schedule="*/5 * * * *", tz="Asia/Tokyo"))
    assert moved.last_tick > added.last_tick + timedelta(minutes=59)
    assert moved.spec.schedule == "*/5 * * * *" and moved.spec.tz == "Asia/Tokyo"
    with pytest.raises(ScheduleNotFound):
        store.schedule_replace(replace(EVERY, name="missing"))


def test_each_tick_moves_once_and_writes_its_task_with_it(store: Store) -> None:
    start = store.schedule_add(EVERY).last_tick
    tick = start + timedelta(seconds=30)
    task = store.schedule_tick("every", tick, tick_task("every", "1"))
    assert task is not None and store.task_get(task.id) is not None
    # The same tick, or an older one, again: refused, nothing written.
    assert store.schedule_tick("every", tick, tick_task("every", "2")) is None
    assert store.schedule_tick("every", start, tick_task("every", "3")) is None
    assert store.task_get("periodic:every:2") is None and store.task_get("periodic:every:3") is None
    after = store.schedule_get("every")
    assert after is not None and (after.last_tick, after.last_task_id) == (tick, task.id)
    assert store.schedule_tick("missing", tick, tick_task("missing")) is None


def test_a_tick_whose_task_exists_is_spent_without_a_second_task(store: Store) -> None:
    start = store.schedule_add(EVERY).last_tick
    taken = store.task_create(tick_task("every", "taken"))
    tick = start + timedelta(seconds=30)
    assert store.schedule_tick("every", tick, tick_task("every", "taken")) is None
    after = store.schedule_get("every")
    assert after is not None and after.last_tick == tick and after.last_task_id is None
    assert [t.id for t in store.task_list(limit=10).tasks] == [taken.id]


def test_a_paused_schedule_takes_no_tick_and_resumes_from_now(store: Store) -> None:
    long_ago = store.clock_now() - timedelta(hours=2)
    store.schedule_add(EVERY, now=long_ago)
    paused = store.schedule_pause("every")
    assert paused.paused and paused.paused_at is not None
    again = store.schedule_pause("every")  # the first pause's time is kept
    assert again.paused_at == paused.paused_at
    tick = long_ago + timedelta(seconds=30)
    assert store.schedule_tick("every", tick, tick_task("every")) is None
    resumed = store.schedule_pause("every", False)
    assert not resumed.paused and resumed.last_tick >= paused.paused_at  # missed ticks dropped
    with pytest.raises(ScheduleNotFound):
        store.schedule_pause("missing")


def test_remove(store: Store) -> None:
    store.schedule_add(EVERY)
    store.schedule_declare([HOURLY])
    assert store.schedule_remove("every") is True
    assert store.schedule_remove("every") is False
    assert [s.name for s in store.schedule_list()] == ["hourly"]


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (replace(EVERY, schedule="every tuesday"), "spec.schedule"),
        (replace(EVERY, schedule=0.5), "spec.schedule"),
        (replace(EVERY, tz="Europe/Berlin"), "spec.tz"),
        (replace(HOURLY, tz="Mars/Olympus"), "spec.tz"),
        (replace(EVERY, name="a/b"), "spec.name"),
        (replace(EVERY, name="a b"), "spec.name"),
        (replace(EVERY, name=""), "spec.name"),
        (replace(EVERY, task=""), "spec.task"),
        (replace(EVERY, args=({1, 2},)), "spec.args[0]"),
        (replace(EVERY, kwargs={"when": float("nan")}), "spec.kwargs['when']"),
        (replace(EVERY, catch_up=-1), "spec.catch_up"),
    ],
)
def test_a_bad_spec_is_refused_and_nothing_is_written(
    store: Store, spec: ScheduleSpec, field: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        store.schedule_add(spec)
    assert refused.value.field == field
    with pytest.raises(InvalidInput):
        store.schedule_declare([EVERY, spec])
    assert store.schedule_list() == []


def test_two_declarations_of_one_name_are_refused(store: Store) -> None:
    with pytest.raises(InvalidInput, match="same name"):
        store.schedule_declare([EVERY, replace(HOURLY, name="every")])
    assert store.schedule_list() == []
