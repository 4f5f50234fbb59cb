"""Reserving: order, topics, tags, run_at, limits, and the lease it grants."""

from __future__ import annotations

from tenure import Status, Store
from tenure.store import ReserveParams
from tests.conformance.support import OWNER, events_since, in_, last_event_cursor, new


def reserve(store: Store, **params: object) -> list[str]:
    params.setdefault("owner", OWNER)
    return [t.id for t in store.task_reserve(ReserveParams(**params))]  # type: ignore[arg-type]


def test_reserve_grants_a_lease(store: Store) -> None:
    created = store.task_create(new())
    before = last_event_cursor(store)
    [task] = store.task_reserve(ReserveParams(owner="w", lease_seconds=30))
    assert task.id == created.id and task.status is Status.RUNNING
    assert (task.lease_owner, task.assignee, task.attempts) == ("w", "w", 1)
    assert task.record_ver == created.record_ver + 1
    assert task.lease_token == task.record_ver
    assert task.started_at is not None and task.lease_expires_at is not None
    assert 29.9 <= (task.lease_expires_at - task.started_at).total_seconds() <= 30.1
    [event] = events_since(store, before)
    assert (event.task_id, event.from_status, event.to_status) == (
        task.id,
        Status.PENDING,
        Status.RUNNING,
    )
    assert (event.attempt, event.owner, event.topic, event.name) == (1, "w", "t", "job")


def test_reserve_order_is_priority_then_oldest(store: Store) -> None:
    low = store.task_create(new(priority=0))
    high_old = store.task_create(new(priority=5))
    high_new = store.task_create(new(priority=5))
    mid = store.task_create(new(priority=2))
    assert reserve(store, limit=10) == [high_old.id, high_new.id, mid.id, low.id]


def test_reserve_one_at_a_time_follows_the_same_order(store: Store) -> None:
    tasks = store.task_create_many([new(priority=p) for p in (1, 3, 2, 3)])
    order = [reserve(store)[0] for _ in range(4)]
    assert order == [tasks[1].id, tasks[3].id, tasks[2].id, tasks[0].id]


def test_reserve_respects_limit_and_empties(store: Store) -> None:
    store.task_create_many([new() for _ in range(5)])
    assert len(reserve(store, limit=3)) == 3
    assert len(reserve(store, limit=3)) == 2
    assert reserve(store, limit=3) == []


def test_reserve_only_named_topics(store: Store) -> None:
    a = store.task_create(new(topic="a"))
    b = store.task_create(new(topic="b"))
    c = store.task_create(new(topic="c"))
    assert set(reserve(store, topics=["a", "c"], limit=10)) == {a.id, c.id}
    assert reserve(store, topics=["a", "c"]) == []
    assert reserve(store, topics=["b"]) == [b.id]


def test_worker_takes_only_tasks_whose_tags_it_has(store: Store) -> None:
    plain = store.task_create(new())
    gpu = store.task_create(new(tags=frozenset({"gpu"})))
    both = store.task_create(new(tags=frozenset({"gpu", "ssd"})))
    assert reserve(store, limit=10, tags=frozenset({"ssd"})) == [plain.id]
    assert reserve(store, limit=10, tags=frozenset({"gpu"})) == [gpu.id]
    assert reserve(store, limit=10, tags=frozenset({"gpu", "ssd", "arm"})) == [both.id]


def test_reserve_waits_for_run_at(store: Store) -> None:
    later = store.task_create(new(run_at=in_(60)))
    delayed = store.task_create(new(delay=120))
    assert reserve(store, limit=10) == []
    assert reserve(store, limit=10, now=in_(61)) == [later.id]
    assert reserve(store, limit=10, now=in_(121)) == [delayed.id]


def test_reserve_skips_tasks_that_are_not_pending(store: Store) -> None:
    task = store.task_create(new())
    store.task_cancel(task.id)
    assert reserve(store, limit=10) == []
