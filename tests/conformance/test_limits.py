"""Concurrency limits and ordered keys on each store: a topic's limit and a
key's most are never exceeded by any reserve statement (any topic, one,
several), a task over its limit waits pending without spending an attempt,
the tasks behind a full topic or key are not held up, an ended or rolled back
task gives its room back; an ordered key's tasks start one at a time in
enqueue order, a retry keeping its place; a topic's rate holds over every
window of its span, on the store's clock. Concurrent reservations, each on its
own connection, take turns under a limit and together never exceed it; a
worker's new concurrency waits on its row for its heartbeat."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from tenure import InvalidInput, Status, Store
from tenure.maintenance.supervisor import Supervisor
from tenure.store import NewTask, ReserveParams, TaskFilter
from tenure.store.types import WorkerInfo
from tests.conformance.support import ERROR, OWNER, FakeClock, lease_of, new
from tests.conftest import StoreFactory

WAYS = pytest.mark.parametrize(
    "topics", [None, ["mail"], ["mail", "math"]], ids=["any", "one", "several"]
)


def reserve(store: Store, topics: list[str] | None = None, limit: int = 10) -> list[str]:
    params = ReserveParams(owner=OWNER, limit=limit, topics=topics)
    return [task.id for task in store.task_reserve(params)]


def keyed(key: str, most: int, topic: str = "mail", **fields: object) -> NewTask:
    return new(topic=topic, limit_key=key, limit_max=most, **fields)


def running(store: Store) -> list[str]:
    page = store.task_list(TaskFilter(status=Status.RUNNING), limit=1000)
    return sorted(task.id for task in page.tasks)


@WAYS
def test_a_topic_runs_at_most_its_limit_and_the_rest_wait_unspent(
    store: Store, topics: list[str] | None
) -> None:
    mail = store.task_create_many([new(topic="mail", priority=5) for _ in range(5)])
    math = store.task_create(new(topic="math"))
    limit = store.topic_limit("mail", 2)
    assert limit is not None and (limit.topic, limit.max_running) == ("mail", 2)
    first = reserve(store, topics)
    assert first == [t.id for t in mail[:2]] + ([] if topics == ["mail"] else [math.id])
    assert reserve(store, topics) == []
    waiting = [store.task_get(t.id) for t in mail[2:]]
    assert all(t is not None and (t.status, t.attempts) == (Status.PENDING, 0) for t in waiting)
    done = store.task_get(mail[0].id)
    assert done is not None
    store.task_complete(lease_of(done), None)
    assert reserve(store, topics) == [mail[2].id]
    assert store.topic_limit("mail", None) is None
    assert reserve(store, topics) == [t.id for t in mail[3:]]


@WAYS
def test_a_key_runs_at_most_its_most_and_other_keys_flow(
    store: Store, topics: list[str] | None
) -> None:
    a = store.task_create_many([keyed("a", 1, priority=9) for _ in range(30)])
    b = store.task_create_many([keyed("b", 2, priority=8) for _ in range(3)])
    free = store.task_create(new(topic="mail"))
    # The first rows offered are all a's, which has room for one; from then
    # on a is full, and its backlog (ahead by priority) is passed over.
    assert reserve(store, topics, limit=10) == [a[0].id]
    assert reserve(store, topics, limit=10) == [b[0].id, b[1].id, free.id]
    late = store.task_create(keyed("c", 1))
    assert reserve(store, topics, limit=1) == [late.id]
    assert reserve(store, topics) == []
    first = store.task_get(a[0].id)
    assert first is not None
    store.task_fail(lease_of(first), ERROR)  # no attempt left: failed, its room back
    assert reserve(store, topics) == [a[1].id]


def test_a_full_topic_does_not_hold_up_the_others(store: Store) -> None:
    store.topic_limit("mail", 1)
    store.task_create_many([new(topic="mail", priority=9) for _ in range(50)])
    assert len(reserve(store, limit=1)) == 1
    other = store.task_create(new(topic="math"))
    assert reserve(store, limit=1) == [other.id]


@WAYS
def test_an_ordered_key_runs_one_at_a_time_in_enqueue_order(
    store: Store, topics: list[str] | None
) -> None:
    first, second, third = store.task_create_many(
        [new(topic="mail", order_key="ledger-7", max_attempts=3, priority=p) for p in (0, 5, 9)]
    )
    other = store.task_create(new(topic="mail", order_key="ledger-8"))
    assert reserve(store, topics) == [first.id, other.id]
    assert reserve(store, topics) == []
    held = store.task_get(first.id)
    assert held is not None
    store.task_fail(lease_of(held), ERROR, retry_in=0)  # a retry keeps its place
    assert reserve(store, topics) == [first.id]
    again = store.task_get(first.id)
    assert again is not None and again.attempts == 2
    store.task_complete(lease_of(again), None)
    assert reserve(store, topics) == [second.id]
    held = store.task_get(second.id)
    assert held is not None
    store.task_complete(lease_of(held), None)
    assert reserve(store, topics) == [third.id]


def test_a_dead_workers_task_gives_its_room_back_with_its_lease(store: Store) -> None:
    clock = FakeClock()
    supervisor = Supervisor(store, clock=clock)
    store.topic_limit("mail", 1)
    store.task_create_many([keyed("k", 1, max_attempts=3), keyed("k", 1)])
    [lost] = store.task_reserve(ReserveParams(owner=OWNER, lease_seconds=10))
    assert reserve(store) == []
    supervisor.run_once()
    clock.advance(10.1)
    [revoked] = supervisor.run_once().revoked
    assert revoked.id == lost.id and revoked.status is Status.PENDING
    assert reserve(store) == [lost.id]


def test_limits_are_listed_changed_and_checked(store: Store) -> None:
    store.topic_limit("mail", 3)
    store.topic_limit("math", 1)
    store.topic_limit("mail", 5)
    assert [(lim.topic, lim.max_running) for lim in store.topic_limits()] == [
        ("mail", 5),
        ("math", 1),
    ]
    assert all(lim.set_at.tzinfo is not None for lim in store.topic_limits())
    for wrong in (0, -1, True, 2.5, "3"):
        with pytest.raises(InvalidInput, match="max_running"):
            store.topic_limit("mail", wrong)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="topic"):
        store.topic_limit("", 1)
    assert store.topic_limit("math", None) is None and store.topic_limit("math", None) is None
    assert [lim.topic for lim in store.topic_limits()] == ["mail"]


def test_keys_are_checked_at_enqueue_and_kept(store: Store) -> None:
    for wrong in (
        {"limit_key": "a"},
        {"limit_max": 2},
        {"limit_key": "a", "limit_max": 0},
        {"limit_key": "", "limit_max": 1},
        {"order_key": "x" * 501},
        {"order_key": 5},
    ):
        with pytest.raises(InvalidInput, match=r"limit_key|limit_max|order_key"):
            store.task_create(new(**wrong))
    assert store.task_list(limit=10).tasks == []
    made = store.task_create(new(limit_key="acct\t1", limit_max=2, order_key="o"))
    read = store.task_get(made.id)
    assert read is not None
    assert (read.limit_key, read.limit_max, read.order_key) == ("acct\t1", 2, "o")
    assert (made.limit_key, made.limit_max, made.order_key) == ("acct\t1", 2, "o")


def reserve_at_once(stores: list[Store]) -> list[str]:
    """What ``stores`` reserve of topic mail, two each, all let go at once."""
    start = threading.Barrier(len(stores))
    taken: list[list[str]] = [[] for _ in stores]

    def take(n: int) -> None:
        start.wait()
        taken[n] = reserve(stores[n], ["mail"], limit=2)

    threads = [threading.Thread(target=take, args=(n,)) for n in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(task for each in taken for task in each)


@pytest.mark.parametrize("kind", ["topic", "key", "order"])
def test_concurrent_reservations_together_stay_within_a_limit(
    store: Store, make_store: StoreFactory, kind: str
) -> None:
    """Eight reservers, each on its own store (its own connection), reserve at
    once, three rounds: what runs never exceeds the limit, and each round
    fills it again once the last one's tasks end."""
    most = 1 if kind == "order" else 3
    fields = {"topic": {}, "key": {"limit_key": "k", "limit_max": most}, "order": {}}[kind]
    if kind == "topic":
        store.topic_limit("mail", most)
    store.task_create_many(
        [new(topic="mail", order_key="o" if kind == "order" else None, **fields) for _ in range(40)]
    )
    stores = [make_store() for _ in range(8)]
    for _ in range(3):
        reserved = reserve_at_once(stores)
        assert reserved == running(store) and len(reserved) == most
        for task_id in reserved:
            task = store.task_get(task_id)
            assert task is not None
            store.task_complete(lease_of(task), None)


def test_a_workers_new_concurrency_waits_on_its_row_for_its_heartbeat(store: Store) -> None:
    beat = WorkerInfo(id="w-1", host="h", pid=1, concurrency=4)
    assert store.worker_beat(beat).scale_to is None
    scaled = store.worker_scale("w-1", 8)
    assert scaled is not None and (scaled.concurrency, scaled.scale_to) == (4, 8)
    # The next beat (still at 4) reads it back, and keeps it.
    assert store.worker_beat(beat).scale_to == 8
    assert [w.scale_to for w in store.worker_list()] == [8]
    assert store.worker_scale("w-2", 8) is None
    for wrong in (0, -1, True, 2.5, 2**31):
        with pytest.raises(InvalidInput, match="concurrency"):
            store.worker_scale("w-1", wrong)  # type: ignore[arg-type]


T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def reserve_at(store: Store, seconds: float, topics: list[str] | None, limit: int = 10) -> int:
    when = T0 + timedelta(seconds=seconds)
    return len(store.task_reserve(ReserveParams(owner=OWNER, limit=limit, topics=topics, now=when)))


@WAYS
def test_a_topics_rate_holds_over_every_window_of_its_span(
    store: Store, topics: list[str] | None
) -> None:
    store.task_create_many([new(topic="mail") for _ in range(10)], now=T0)
    rate = store.topic_rate("mail", 3, per=60, now=T0)
    assert rate is not None and (rate.max_starts, rate.per_seconds) == (3, 60.0)
    assert reserve_at(store, 0, topics, limit=2) == 2
    assert reserve_at(store, 30, topics) == 1  # the window holds two: room for one
    assert reserve_at(store, 59, topics) == 0
    assert reserve_at(store, 60.5, topics) == 2  # the first two left the window
    assert reserve_at(store, 89, topics) == 0
    assert reserve_at(store, 90.5, topics) == 1
    assert store.rate_prune(now=T0 + timedelta(seconds=100)) == 3  # those at 0 and 30
    assert store.topic_rate("mail", None) is None
    assert reserve_at(store, 91, topics) == 4


def test_rates_are_listed_changed_and_checked(store: Store) -> None:
    store.topic_rate("mail", 100, per=60)
    store.topic_rate("mail", 5, per=1)
    [rate] = store.topic_rates()
    assert (rate.topic, rate.max_starts, rate.per_seconds) == ("mail", 5, 1.0)
    for wrong, field in ((0, "max_starts"), (True, "max_starts"), (2.5, "max_starts")):
        with pytest.raises(InvalidInput, match=field):
            store.topic_rate("mail", wrong)  # type: ignore[arg-type]
    for span in (0, -1, float("nan")):
        with pytest.raises(InvalidInput, match="per"):
            store.topic_rate("mail", 3, per=span)
    assert store.topic_rate("mail", None) is None and store.topic_rates() == []


def test_concurrent_reservations_together_stay_within_a_rate(
    store: Store, make_store: StoreFactory
) -> None:
    store.topic_rate("mail", 5, per=3600)
    store.task_create_many([new(topic="mail") for _ in range(40)])
    stores = [make_store() for _ in range(8)]
    assert len(reserve_at_once(stores)) == 5
    assert reserve_at_once(stores) == []
