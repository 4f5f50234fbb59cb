"""What the dashboard charts: the tasks entering each status minute by minute,
and the progress of the groups among the newest tasks."""

from __future__ import annotations

from datetime import UTC, timedelta
from itertools import pairwise

import pytest

from tenure import InvalidInput, Status, Store
from tenure.store.types import MinuteRate
from tests.conformance.support import new, reach, reserve_one

NOTHING = dict.fromkeys(Status, 0)


def run_some(store: Store, topic: str) -> list[MinuteRate]:
    """Create three tasks of ``topic``, run two to done, and read the rates."""
    store.task_create_many([new(topic=topic) for _ in range(3)])
    for _ in range(2):
        _, lease = reserve_one(store, topics=[topic])
        store.task_complete(lease)
    return store.task_rates(minutes=5, topic=topic)


def test_the_current_minute_counts_what_entered_each_status(store: Store) -> None:
    store.task_create(new(topic="other"))
    for attempt in range(3):  # until no minute began while the tasks were run
        began = store.clock_now().replace(second=0, microsecond=0)
        rates = run_some(store, f"rated-{attempt}")
        if rates[-1].minute == began:
            break
    assert rates[-1].entered == {
        **NOTHING,
        Status.PENDING: 3,
        Status.RUNNING: 2,
        Status.DONE: 2,
    }
    assert [rate.entered for rate in rates[:-1]] == [NOTHING] * 4
    everything = store.task_rates(minutes=5)
    created = sum(rate.entered[Status.PENDING] for rate in everything)
    assert created == 3 * (attempt + 1) + 1  # every topic's
    unknown = store.task_rates(minutes=5, topic="nothing")
    assert [rate.entered for rate in unknown] == [NOTHING] * 5


def test_each_of_the_minutes_asked_for_is_there_oldest_first(store: Store) -> None:
    before = store.clock_now()
    rates = store.task_rates(minutes=7)
    after = store.clock_now()
    assert len(rates) == 7 and all(rate.entered == NOTHING for rate in rates)
    minutes = [rate.minute for rate in rates]
    assert all(m.tzinfo is not None and m.utcoffset() == timedelta(0) for m in minutes)
    assert all(m.second == 0 and m.microsecond == 0 for m in minutes)
    assert [b - a for a, b in pairwise(minutes)] == [timedelta(minutes=1)] * 6
    current = minutes[-1].astimezone(UTC)
    assert before - timedelta(minutes=1) < current <= after  # the minute it is now
    assert len(store.task_rates()) == 60 and len(store.task_rates(minutes=1440)) == 1440


@pytest.mark.parametrize(("field", "bad"), [("minutes", 0), ("minutes", 1441),
                                            ("minutes", True), ("minutes", 2.0),
                                            ("topic", ""), ("topic", 5)])  # fmt: skip
def test_invalid_rate_arguments_are_refused(store: Store, field: str, bad: object) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.task_rates(**{field: bad})  # type: ignore[arg-type]
    assert raised.value.field == field


def test_groups_come_newest_first_with_every_task_counted(store: Store) -> None:
    first = store.task_create(new(group_id="old"))
    reach(store, Status.DONE, group_id="old")
    store.task_create_many([new() for _ in range(5)])  # no group
    reach(store, Status.FAILED, group_id="middle")
    store.task_create(new(group_id="new"))
    store.task_create(new(group_id="old"))  # "old" has the newest task now
    store.task_create(new())
    groups = store.task_groups()
    assert [g.group_id for g in groups] == ["old", "new", "middle"]
    old = groups[0]
    assert old.counts == {**NOTHING, Status.PENDING: 2, Status.DONE: 1} and old.total == 3
    assert old.created_at == first.created_at
    assert groups[2].counts == {**NOTHING, Status.FAILED: 1}
    assert [g.group_id for g in store.task_groups(limit=2)] == ["old", "new"]


def test_only_the_newest_tasks_are_looked_at_but_groups_count_all(store: Store) -> None:
    store.task_create_many([new(group_id="early") for _ in range(4)])
    store.task_create(new(group_id="late"))
    store.task_create_many([new() for _ in range(3)])
    assert store.task_groups(scan=3) == []  # the newest three have no group
    assert [g.group_id for g in store.task_groups(scan=4)] == ["late"]
    store.task_create(new(group_id="early"))
    (early,) = store.task_groups(scan=1)
    assert early.group_id == "early" and early.total == 5  # all of them, not one
    assert store.task_groups(scan=100) == store.task_groups(scan=100, limit=10)


@pytest.mark.parametrize(("field", "bad"), [("limit", 0), ("limit", 10_001), ("scan", 0),
                                            ("scan", 10_000_001), ("scan", "9")])  # fmt: skip
def test_invalid_group_arguments_are_refused(store: Store, field: str, bad: object) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.task_groups(**{field: bad})  # type: ignore[arg-type]
    assert raised.value.field == field
