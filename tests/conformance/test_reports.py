"""The observer's reports: one per query key, saved once per slot with one report
event, replaced only by a later slot; and the observer that saves them, run on a
real store (see tests/unit/test_observer.py for its schedule and filters)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tenure import InvalidInput, Status, Store
from tenure.maintenance.observer import Observation, Observer
from tenure.store.eventlog import MAX_REPORT_IDS
from tenure.store.types import Report
from tests.conformance.support import events_since, in_, new, reserve_one
from tests.conftest import StoreFactory

SLOT = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)
QUERY: dict[str, Any] = {
    "status": "done",
    "age": 1.5,
    "every": 60,
    "nested": {"list": [1, "two", None, True], "empty": {}},
    "unicode": "héllo ✓",
}


def save(store: Store, key: str = "q", slot: datetime = SLOT, **fields: Any) -> Report | None:
    values: dict[str, Any] = {"owner": "scheduler-1", "query": QUERY, "task_ids": ["a", "b"]}
    values["total"] = 2
    values.update(fields)
    return store.report_save(key, slot, **values)


def report_events(store: Store) -> list[tuple[str, int, str | None]]:
    return [(e.name, e.attempt, e.owner) for e in events_since(store, None) if e.kind == "report"]


# -- saving --------------------------------------------------------------------------


def test_save_returns_the_report_as_stored(store: Store) -> None:
    before = store.clock_now()
    report = save(store, task_ids=["t1", "t2", "t3"], total=7)
    after = store.clock_now()
    assert report is not None
    assert (report.key, report.slot, report.owner) == ("q", SLOT, "scheduler-1")
    assert report.query == QUERY
    assert report.task_ids == ("t1", "t2", "t3")
    assert report.total == 7
    assert before <= report.run_at <= after, "run_at is not the store's time of saving"
    assert store.report_get("q") == report
    assert report_events(store) == [("q", 7, "scheduler-1")]


def test_a_slot_keeps_its_microseconds(store: Store) -> None:
    slot = SLOT.replace(microsecond=123_457)
    report = save(store, slot=slot)
    assert report is not None and report.slot == slot
    assert save(store, slot=slot) is None


def test_a_total_beyond_32_bits_round_trips(store: Store) -> None:
    report = save(store, total=2**62)
    assert report is not None and report.total == 2**62
    assert report_events(store) == [("q", 2**62, "scheduler-1")]


def test_an_empty_report_is_saved(store: Store) -> None:
    report = save(store, query={}, task_ids=[], total=0)
    assert report is not None
    assert (report.query, report.task_ids, report.total) == ({}, (), 0)
    assert store.report_get("q") == report


def test_the_same_slot_is_saved_once(store: Store) -> None:
    first = save(store, total=2)
    assert save(store, total=99, owner="scheduler-2") is None
    assert store.report_get("q") == first
    assert report_events(store) == [("q", 2, "scheduler-1")]


def test_an_earlier_slot_changes_nothing(store: Store) -> None:
    first = save(store, total=2)
    assert save(store, slot=SLOT - timedelta(seconds=1), total=99) is None
    assert store.report_get("q") == first
    assert report_events(store) == [("q", 2, "scheduler-1")]


def test_a_later_slot_replaces_the_report(store: Store) -> None:
    save(store, total=2)
    later = save(store, slot=SLOT + timedelta(seconds=1), task_ids=["c"], total=1, owner="s2")
    assert later is not None
    assert (later.slot, later.task_ids, later.total) == (SLOT + timedelta(seconds=1), ("c",), 1)
    assert store.report_get("q") == later
    assert store.report_list() == [later]
    assert report_events(store) == [("q", 2, "scheduler-1"), ("q", 1, "s2")]


def test_keys_are_reported_apart(store: Store) -> None:
    for key in ("b", "c", "a"):
        assert save(store, key=key) is not None
    assert save(store, key="a") is None  # b and c took no slot from a
    assert [r.key for r in store.report_list()] == ["a", "b", "c"]
    assert [name for name, _, _ in report_events(store)] == ["b", "c", "a"]


def test_an_unknown_key_has_no_report(store: Store) -> None:
    assert store.report_get("never-ran") is None
    assert store.report_list() == []
    save(store, key="ran")
    assert store.report_get("never-ran") is None


def test_prune_deletes_reports_saved_before_the_cutoff(store: Store) -> None:
    save(store, key="a")
    save(store, key="b")
    assert store.report_prune(3600) == 0
    assert len(store.report_list()) == 2
    assert store.report_prune(60, now=in_(3600)) == 2
    assert store.report_list() == []
    assert store.report_get("a") is None
    assert save(store, key="a") is not None  # a pruned key starts afresh


# -- bad input -------------------------------------------------------------------------


BAD_INPUT: list[tuple[dict[str, Any], str]] = [
    ({"key": ""}, "key"),
    ({"key": 5}, "key"),
    ({"owner": ""}, "owner"),
    ({"slot": datetime(2030, 5, 1, 12, 0)}, "slot"),  # naive
    ({"slot": "2030-05-01T12:00:00+00:00"}, "slot"),
    ({"query": ["status", "done"]}, "query"),
    ({"query": None}, "query"),
    ({"query": {"when": SLOT}}, "query['when']"),
    ({"query": {"x": object()}}, "query['x']"),
    ({"query": {"nan": float("nan")}}, "query['nan']"),
    ({"task_ids": "abc"}, "task_ids"),
    ({"task_ids": [""]}, "task_ids"),
    ({"task_ids": [1, 2]}, "task_ids"),
    ({"task_ids": ["x"] * (MAX_REPORT_IDS + 1)}, "task_ids"),
    ({"total": -1}, "total"),
    ({"total": 1.5}, "total"),
    ({"total": True}, "total"),
]


@pytest.mark.parametrize(("fields", "field"), BAD_INPUT, ids=[f for _, f in BAD_INPUT])
def test_bad_input_is_refused_and_writes_nothing(
    store: Store, fields: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        save(store, **fields)
    assert raised.value.field == field
    assert store.report_list() == []
    assert events_since(store, None) == []


def test_the_most_ids_kept_are_accepted(store: Store) -> None:
    ids = [f"t{i}" for i in range(MAX_REPORT_IDS)]
    report = save(store, task_ids=ids, total=MAX_REPORT_IDS + 5)
    assert report is not None and report.task_ids == tuple(ids)


@pytest.mark.parametrize("older_than", [-1, float("inf")])
def test_prune_refuses_a_bad_age(store: Store, older_than: float) -> None:
    save(store)
    with pytest.raises(InvalidInput):
        store.report_prune(older_than)
    assert len(store.report_list()) == 1


# -- two schedulers -----------------------------------------------------------------


def race(stores: list[Store], key: str, slot: datetime) -> list[Report | None]:
    """Every store saves ``key`` for ``slot`` at once, each from a thread."""
    start = threading.Barrier(len(stores))
    results: list[Report | None] = [None] * len(stores)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            start.wait(timeout=10)
            results[index] = save(stores[index], key=key, slot=slot, owner=f"s{index}")
        except BaseException as exc:  # surfaced below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors, errors
    return results


def test_two_stores_racing_one_slot_save_it_once(make_store: StoreFactory) -> None:
    stores = [make_store(), make_store()]
    for round_ in range(10):
        slot = SLOT + timedelta(minutes=round_)
        saved = [r for r in race(stores, "raced", slot) if r is not None]
        assert len(saved) == 1, f"round {round_}: {len(saved)} saved"
        assert stores[0].report_get("raced") == saved[0]
    events = report_events(stores[0])
    assert len(events) == 10
    assert [name for name, _, _ in events] == ["raced"] * 10


# -- the observer on a real store ------------------------------------------------------


DONE_KEY = "tasks-that-done"
AGED_KEY = "tasks-that-created-at-least-1second-before"


def recent_at(store: Store, seconds_ago: int = 5) -> str:
    """A time of day (UTC) a few seconds ago on the store's clock: its slot is
    due now, within the lookback, and stays the same slot all day."""
    return f"{store.clock_now() - timedelta(seconds=seconds_ago):%H:%M:%S}"


def seed_observations(store: Store) -> list[Observation]:
    at = recent_at(store)
    return [
        Observation(DONE_KEY, status=Status.DONE, at=at),
        Observation(AGED_KEY, age=1, at=at),
    ]


def finish(store: Store, created: datetime) -> str:
    """A task created at ``created``, reserved and completed now; its id."""
    task = store.task_create(new(topic="observed"), now=created)
    _, lease = reserve_one(store, topics=["observed"])
    store.task_complete(lease, {"ok": True})
    return task.id


def seed_tasks(store: Store) -> dict[str, list[str]]:
    """Two done tasks and one pending created a minute ago, a pending task
    created far after the run (younger than any age), a cancelled one."""
    past = store.clock_now() - timedelta(minutes=1)
    done = [finish(store, past), finish(store, past + timedelta(seconds=1))]
    waiting = store.task_create(new(topic="waiting"), now=past + timedelta(seconds=2)).id
    cancelled = store.task_create(new(topic="gone"), now=past + timedelta(seconds=3)).id
    store.task_cancel(cancelled)
    store.task_create(new(topic="young"), now=store.clock_now() + timedelta(hours=1))
    return {"done": done, "old": [*done, waiting, cancelled]}


def test_run_once_reports_the_seed_queries(store: Store) -> None:
    seeded = seed_tasks(store)
    observations = seed_observations(store)
    before = store.clock_now()
    reports = {r.key: r for r in Observer(observations).run_once(store, "scheduler-a")}
    assert sorted(reports) == [AGED_KEY, DONE_KEY]
    assert (reports[DONE_KEY].task_ids, reports[DONE_KEY].total) == (tuple(seeded["done"]), 2)
    assert (reports[AGED_KEY].task_ids, reports[AGED_KEY].total) == (tuple(seeded["old"]), 4)
    for observation in observations:
        report = reports[observation.key]
        assert report.owner == "scheduler-a"
        assert report.query == observation.describe()
        assert report.slot == observation.slot(before)
        assert store.report_get(observation.key) == report


def test_a_second_run_in_the_slot_saves_nothing(store: Store) -> None:
    seed_tasks(store)
    observer = Observer(seed_observations(store))
    first = observer.run_once(store, "scheduler-a")
    assert len(first) == 2
    finish(store, store.clock_now() - timedelta(minutes=1))  # the result would differ now
    assert observer.run_once(store, "scheduler-a") == []
    assert Observer(observer.observations).run_once(store, "scheduler-b") == []  # a failover
    assert sorted(store.report_list(), key=lambda r: r.key) == sorted(first, key=lambda r: r.key)
    assert sorted(name for name, _, _ in report_events(store)) == [AGED_KEY, DONE_KEY]


def test_two_schedulers_in_one_slot_report_once(make_store: StoreFactory) -> None:
    first, second = make_store(), make_store()
    seed_tasks(first)
    observations = seed_observations(first)
    saved = Observer(observations).run_once(first, "scheduler-a")
    saved += Observer(observations).run_once(second, "scheduler-b")
    assert sorted(r.key for r in saved) == [AGED_KEY, DONE_KEY]
    assert all(r.owner == "scheduler-a" for r in second.report_list())
    assert len(report_events(second)) == 2


def test_run_once_keeps_at_most_limit_ids_and_counts_them_all(store: Store) -> None:
    seeded = seed_tasks(store)
    at = recent_at(store)
    observations = [
        Observation("first-two", age=1, limit=2, at=at),
        Observation("count-only", age=1, limit=0, at=at),
    ]
    reports = {r.key: r for r in Observer(observations).run_once(store, "s")}
    assert (reports["first-two"].task_ids, reports["first-two"].total) == (
        tuple(seeded["old"][:2]),
        4,
    )
    assert (reports["count-only"].task_ids, reports["count-only"].total) == ((), 4)


def test_a_slot_past_the_lookback_is_not_made_up(store: Store) -> None:
    late = Observation("late", at=recent_at(store, seconds_ago=120))
    assert Observer([late]).run_once(store, "s") == []
    assert Observer([late], lookback=600).run_once(store, "s") != []
    assert [r.key for r in store.report_list()] == ["late"]
