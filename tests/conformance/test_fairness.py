"""Fairness across keys on each store: within a priority, reservations take
tasks in turns between fair keys, so a key's backlog delays another key's
lone task by one task of each key in the round under way, not by the whole
backlog; a task's turn is given at enqueue, one at a time, in a batch (the
bulk path included) and across enqueues; tasks without a key keep priority
then age, and priority still comes first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tenure import InvalidInput, Store
from tenure.store import NewTask, ReserveParams
from tests.conformance.support import OWNER, new

WAYS = pytest.mark.parametrize(
    "topics", [None, ["mail"], ["mail", "math"]], ids=["any", "one", "several"]
)


def reserve(store: Store, topics: list[str] | None = None, limit: int = 10) -> list[str]:
    params = ReserveParams(owner=OWNER, limit=limit, topics=topics)
    return [task.id for task in store.task_reserve(params)]


def fair(key: str, topic: str = "mail", **fields: object) -> NewTask:
    return new(topic=topic, fair_key=key, **fields)


@WAYS
@pytest.mark.parametrize("backlog", [20, 500], ids=["batch", "bulk"])
def test_a_lone_keys_task_joins_the_round_under_way(
    store: Store, topics: list[str] | None, backlog: int
) -> None:
    """500 tasks in one call take the bulk path where a store has one: their
    turns are counted there too."""
    big = store.task_create_many([fair("big") for _ in range(backlog)])
    assert reserve(store, topics) == [t.id for t in big[:10]]
    lone = store.task_create(fair("lone"))
    assert reserve(store, topics, limit=2) == [big[10].id, lone.id]
    assert reserve(store, topics, limit=2) == [t.id for t in big[11:13]]


@WAYS
def test_keys_take_turns_one_task_each_a_round(store: Store, topics: list[str] | None) -> None:
    a = [store.task_create(fair("a")) for _ in range(3)]
    b = store.task_create_many([fair("b") for _ in range(3)])
    c = store.task_create(fair("c"))
    rounds = [a[0], b[0], c, a[1], b[1], a[2], b[2]]
    assert reserve(store, topics, limit=7) == [t.id for t in rounds]


@WAYS
def test_priority_comes_before_turns_and_keyless_tasks_keep_their_age(
    store: Store, topics: list[str] | None
) -> None:
    plain = store.task_create_many([new(topic="mail") for _ in range(2)])
    keyed = store.task_create_many([fair("a") for _ in range(3)])
    urgent = store.task_create(fair("b", priority=5))
    taken = reserve(store, topics)
    assert taken == [urgent.id, *(t.id for t in plain), *(t.id for t in keyed)]


def test_a_keys_turns_are_counted_per_topic(store: Store) -> None:
    """Another topic's backlog of the same key holds no turn in this one."""
    store.task_create_many([fair("a", topic="math") for _ in range(5)])
    mail = store.task_create_many([fair("b"), fair("b"), fair("a")])
    assert reserve(store, ["mail"]) == [mail[0].id, mail[2].id, mail[1].id]


def test_the_key_is_kept_and_checked(store: Store) -> None:
    task = store.task_create(fair("tenant:42"))
    found = store.task_get(task.id)
    assert found is not None and found.fair_key == "tenant:42" == task.fair_key
    with pytest.raises(InvalidInput, match="fair_key"):
        store.task_create(fair("x" * 10_000))
    with pytest.raises(InvalidInput, match="fair_key"):
        store.task_create(new(fair_key=42))


def test_a_delayed_task_holds_no_round_back(store: Store) -> None:
    """A task not yet runnable keeps its early turn, but the round a new key
    joins is the first runnable turn: the new key does not jump the queue."""
    later = datetime.now(UTC) + timedelta(hours=1)
    store.task_create(fair("d", run_at=later))
    a = [store.task_create(fair("a")) for _ in range(5)]
    assert reserve(store, ["mail"], limit=3) == [t.id for t in a[:3]]
    c = store.task_create(fair("c"))
    assert reserve(store, ["mail"], limit=3) == [a[3].id, c.id, a[4].id]
