"""Unique locks in every store: each phase, each conflict strategy, the time to
live, batches, and the event log of a start refused by a lock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tenure import LockPhase, OnConflict, Status, Store, Task, UniqueConflict
from tenure.store import ReserveParams, TaskFilter, UniqueRule
from tests.conformance.support import ERROR, events_since, last_event_cursor, lease_of, new

UNTIL_EXECUTING = LockPhase.UNTIL_EXECUTING
WHILE_EXECUTING = LockPhase.WHILE_EXECUTING
UNTIL_EXECUTED = LockPhase.UNTIL_EXECUTED
T0 = datetime(2030, 1, 1, tzinfo=UTC)


def unique(lock: LockPhase, on_conflict: OnConflict = OnConflict.REJECT, **rule: object) -> object:
    """A task of topic "u" whose lock key is "k"."""
    fields = {"key": "k", "lock": lock, "on_conflict": on_conflict, **rule}
    return new(topic="u", unique=UniqueRule(**fields))  # type: ignore[arg-type]


def create(store: Store, lock: LockPhase, **rule: object) -> Task:
    return store.task_create(unique(lock, **rule))  # type: ignore[arg-type]


def reserve(store: Store, owner: str = "w1", limit: int = 10, **params: object) -> list[Task]:
    return store.task_reserve(
        ReserveParams(owner=owner, topics=["u"], limit=limit, **params)  # type: ignore[arg-type]
    )


def holders(store: Store, **params: object) -> dict[str, str]:
    return {lock.key: lock.task_id for lock in store.unique_lock_list(**params)}  # type: ignore[arg-type]


def count(store: Store) -> int:
    return store.task_count(TaskFilter(topic="u"))


# -- locks taken at enqueue ----------------------------------------------------------


@pytest.mark.parametrize("lock", [UNTIL_EXECUTING, UNTIL_EXECUTED])
def test_a_held_enqueue_lock_refuses_the_twin_and_writes_nothing(
    store: Store, lock: LockPhase
) -> None:
    first = create(store, lock)
    assert holders(store) == {"k": first.id}
    before = last_event_cursor(store)
    with pytest.raises(UniqueConflict) as refused:
        create(store, lock)
    assert refused.value.holder == first.id and refused.value.key == "k"
    assert count(store) == 1 and events_since(store, before) == []


def test_until_executing_lock_ends_when_the_task_starts(store: Store) -> None:
    first = create(store, UNTIL_EXECUTING)
    [running] = reserve(store)
    assert running.id == first.id and holders(store) == {}
    second = create(store, UNTIL_EXECUTING)  # while the first still runs
    assert holders(store) == {"k": second.id}


def test_until_executed_lock_lasts_through_the_run_and_a_retry(store: Store) -> None:
    rule = UniqueRule(key="k", lock=UNTIL_EXECUTED)
    first = store.task_create(new(topic="u", max_attempts=2, unique=rule))
    [running] = reserve(store)
    assert holders(store) == {"k": first.id}
    # A failed attempt that will be retried is not the end of the task.
    store.task_fail(lease_of(running, "w1"), ERROR, retry_in=0)
    assert holders(store) == {"k": first.id}
    with pytest.raises(UniqueConflict):
        create(store, UNTIL_EXECUTED)
    [again] = reserve(store)
    store.task_complete(lease_of(again, "w1"), "ok")
    assert holders(store) == {}
    create(store, UNTIL_EXECUTED)


@pytest.mark.parametrize("end", ["complete", "fail", "cancel"])
def test_every_end_gives_the_lock_up(store: Store, end: str) -> None:
    first = create(store, UNTIL_EXECUTED)
    if end == "cancel":
        store.task_cancel(first.id)
    else:
        [running] = reserve(store)
        lease = lease_of(running, "w1")
        if end == "complete":
            store.task_complete(lease, None)
        else:
            store.task_fail(lease, ERROR)
    assert holders(store) == {}
    assert create(store, UNTIL_EXECUTED).status is Status.PENDING


def test_a_batch_refuses_every_conflict_and_writes_nothing(store: Store) -> None:
    held = create(store, UNTIL_EXECUTED)
    rule = {"lock": UNTIL_EXECUTED}
    batch = [
        new(topic="u", unique=UniqueRule(key="free", **rule)),  # type: ignore[arg-type]
        new(topic="u", unique=UniqueRule(key="k", **rule)),  # type: ignore[arg-type]
        new(topic="u", unique=UniqueRule(key="other", **rule)),  # type: ignore[arg-type]
    ]
    with pytest.raises(UniqueConflict) as refused:
        store.task_create_many(batch)
    assert refused.value.conflicts == ((1, "k", held.id),)
    assert count(store) == 1 and holders(store) == {"k": held.id}


def test_twins_inside_one_batch_conflict_with_the_first(store: Store) -> None:
    rule = UniqueRule(key="k", lock=UNTIL_EXECUTING)
    batch = [new(topic="u", id="a", unique=rule), new(topic="u", id="b", unique=rule)]
    with pytest.raises(UniqueConflict) as refused:
        store.task_create_many(batch)
    assert refused.value.conflicts == ((1, "k", "a"),)
    assert count(store) == 0 and holders(store) == {}


# -- the time to live ----------------------------------------------------------------


def test_a_lock_expires_after_its_ttl_from_the_scheduled_time(store: Store) -> None:
    at = {"now": T0}
    rule = UniqueRule(key="k", lock=UNTIL_EXECUTING, ttl=10)
    first = store.task_create(new(topic="u", unique=rule, delay=100), now=T0)
    # Due at T0+100, so its lock lives until T0+110.
    [lock] = store.unique_lock_list(**at)
    assert lock.expires_at == T0 + timedelta(seconds=110) and lock.task_id == first.id
    with pytest.raises(UniqueConflict):
        store.task_create(new(topic="u", unique=rule), now=T0 + timedelta(seconds=109))
    later = T0 + timedelta(seconds=111)
    assert store.unique_lock_list(now=later) == []
    second = store.task_create(new(topic="u", unique=rule), now=later)
    assert holders(store, now=later) == {"k": second.id}


def test_pruning_deletes_only_expired_locks(store: Store) -> None:
    store.task_create(
        new(topic="u", unique=UniqueRule(key="old", lock=UNTIL_EXECUTED, ttl=5)), now=T0
    )
    young = store.task_create(
        new(topic="u", unique=UniqueRule(key="young", lock=UNTIL_EXECUTED, ttl=50)), now=T0
    )
    assert store.unique_lock_prune(now=T0 + timedelta(seconds=6)) == 1
    assert holders(store, now=T0) == {"young": young.id}


# -- locks taken at start ------------------------------------------------------------


def test_while_executing_takes_the_lock_at_start_and_gives_it_up_at_the_end(
    store: Store,
) -> None:
    first = create(store, WHILE_EXECUTING)
    create(store, WHILE_EXECUTING)  # no lock at enqueue: both exist
    assert holders(store) == {} and count(store) == 2
    [running] = reserve(store, limit=1)
    assert running.id == first.id and holders(store) == {"k": first.id}
    store.task_complete(lease_of(running, "w1"), None)
    assert holders(store) == {}


def test_start_refused_by_reject_cancels_with_the_reason(store: Store) -> None:
    first = create(store, WHILE_EXECUTING)
    second = create(store, WHILE_EXECUTING)
    [running] = reserve(store, limit=1)
    before = last_event_cursor(store)
    assert reserve(store, owner="w2") == []
    refused = store.task_get(second.id)
    assert refused is not None and refused.status is Status.CANCELLED
    assert refused.error is not None and refused.error.type == "UniqueConflict"
    assert first.id in refused.error.message and refused.lease_owner is None
    steps = [(e.from_status, e.to_status) for e in events_since(store, before)]
    assert steps == [(Status.PENDING, Status.RUNNING), (Status.RUNNING, Status.CANCELLED)]
    assert holders(store) == {"k": running.id}


def test_start_refused_by_reschedule_waits_without_spending_an_attempt(store: Store) -> None:
    create(store, WHILE_EXECUTING, on_conflict=OnConflict.RESCHEDULE, retry_in=30)
    second = create(store, WHILE_EXECUTING, on_conflict=OnConflict.RESCHEDULE, retry_in=30)
    [running] = reserve(store, limit=1, now=T0)
    before = last_event_cursor(store)
    assert reserve(store, owner="w2", now=T0) == []
    steps = [(e.from_status, e.to_status, e.attempt) for e in events_since(store, before)]
    assert steps == [(Status.PENDING, Status.RUNNING, 1), (Status.RUNNING, Status.PENDING, 0)]
    waiting = store.task_get(second.id)
    assert waiting is not None and waiting.status is Status.PENDING
    assert waiting.attempts == 0 and waiting.run_at == T0 + timedelta(seconds=30)
    assert waiting.error is None
    store.task_complete(lease_of(running, "w1"), None, now=T0 + timedelta(seconds=1))
    assert reserve(store, owner="w2", now=T0 + timedelta(seconds=29)) == []
    [started] = reserve(store, owner="w2", now=T0 + timedelta(seconds=30))
    assert started.id == second.id and started.attempts == 1


def test_start_refused_by_raise_fails_the_attempt(store: Store) -> None:
    rule = UniqueRule(key="k", lock=WHILE_EXECUTING, on_conflict=OnConflict.RAISE, retry_in=5)
    first = store.task_create(new(topic="u", priority=3, unique=rule), now=T0)
    second = store.task_create(new(topic="u", priority=3, max_attempts=2, unique=rule), now=T0)
    [held] = reserve(store, limit=1, now=T0)
    assert held.id == first.id
    before = last_event_cursor(store)
    assert reserve(store, owner="w2", now=T0 + timedelta(seconds=10)) == []
    steps = [(e.from_status, e.to_status, e.attempt) for e in events_since(store, before)]
    assert steps == [(Status.PENDING, Status.RUNNING, 1), (Status.RUNNING, Status.PENDING, 1)]
    retried = store.task_get(second.id)
    assert retried is not None and retried.status is Status.PENDING
    assert retried.attempts == 1 and retried.priority == 2
    assert retried.run_at == T0 + timedelta(seconds=15)
    assert retried.error is not None and retried.error.type == "UniqueConflict"
    # The last attempt refused the same way ends the task failed.
    assert reserve(store, owner="w2", now=T0 + timedelta(seconds=20)) == []
    failed = store.task_get(second.id)
    assert failed is not None and failed.status is Status.FAILED and failed.attempts == 2


def test_twins_reserved_in_one_batch_start_once(store: Store) -> None:
    for _ in range(3):
        create(store, WHILE_EXECUTING)
    started = reserve(store, limit=10)
    assert len(started) == 1
    assert store.task_count(TaskFilter(topic="u", status=Status.CANCELLED)) == 2


def test_going_back_to_pending_gives_a_while_executing_lock_up(store: Store) -> None:
    first = create(store, WHILE_EXECUTING)
    [running] = reserve(store, limit=1)
    snoozed = store.task_snooze(lease_of(running, "w1"), 60)
    assert holders(store) == {"k": first.id}  # still executing, only asleep
    assert store.task_revoke(first.id, snoozed.record_ver) is not None  # woken
    assert holders(store) == {}
    [again] = reserve(store, limit=1)
    assert again.id == first.id and holders(store) == {"k": first.id}
    store.task_release(lease_of(again, "w1"))
    assert holders(store) == {}


def twin_starts_and_takes_the_lock(store: Store) -> None:
    twin = store.task_create(
        new(topic="u", priority=5, unique=UniqueRule(key="k", lock=WHILE_EXECUTING))
    )
    [started] = reserve(store, owner="w2", limit=1)
    assert started.id == twin.id and started.status is Status.RUNNING
    assert holders(store) == {"k": twin.id}


@pytest.mark.parametrize(
    ("end", "status"),
    [("fail", Status.FAILED), ("cancel", Status.CANCELLED), ("revoke", Status.PENDING)],
)
def test_while_executing_lock_is_given_up_when_a_run_ends_or_is_taken_back(
    store: Store, end: str, status: Status
) -> None:
    # One attempt to fail with; two so that a revoke sends the task back to pending.
    attempts = 1 if end == "fail" else 2
    rule = UniqueRule(key="k", lock=WHILE_EXECUTING)
    first = store.task_create(new(topic="u", max_attempts=attempts, unique=rule))
    [running] = reserve(store, limit=1)
    assert holders(store) == {"k": first.id}
    if end == "fail":
        ended = store.task_fail(lease_of(running, "w1"), ERROR)
    elif end == "cancel":
        ended = store.task_cancel(running.id)
    else:  # as the supervisor does once the lease is lost
        revoked = store.task_revoke(running.id, running.record_ver)
        assert revoked is not None
        ended = revoked
    assert ended.status is status and holders(store) == {}
    twin_starts_and_takes_the_lock(store)


def test_until_executed_start_finds_its_own_lock_and_keeps_it(store: Store) -> None:
    first = create(store, UNTIL_EXECUTED)
    [lock] = store.unique_lock_list()
    [running] = reserve(store)
    assert running.id == first.id
    assert store.unique_lock_list() == [lock]  # same holder, same expiry


def test_until_executed_start_is_refused_when_its_expired_lock_was_taken(store: Store) -> None:
    rule = UniqueRule(key="k", lock=UNTIL_EXECUTED, ttl=10)
    first = store.task_create(new(topic="u", unique=rule), now=T0)
    later = T0 + timedelta(seconds=20)
    second = store.task_create(new(topic="u", unique=rule), now=later)
    started = reserve(store, now=later)
    assert [task.id for task in started] == [second.id]
    refused = store.task_get(first.id)
    assert refused is not None and refused.status is Status.CANCELLED


def test_until_executed_start_refused_by_raise_is_retried_later(store: Store) -> None:
    rule = UniqueRule(
        key="k", lock=UNTIL_EXECUTED, on_conflict=OnConflict.RAISE, ttl=10, retry_in=5
    )
    first = store.task_create(new(topic="u", max_attempts=2, unique=rule), now=T0)
    later = T0 + timedelta(seconds=20)
    second = store.task_create(new(topic="u", unique=rule), now=later)
    [running] = reserve(store, now=later)
    assert running.id == second.id and holders(store, now=later) == {"k": second.id}
    retried = store.task_get(first.id)
    assert retried is not None and retried.status is Status.PENDING
    assert retried.attempts == 1 and retried.run_at == later + timedelta(seconds=5)
    assert retried.error is not None and retried.error.type == "UniqueConflict"
    assert second.id in retried.error.message
    store.task_complete(lease_of(running, "w1"), None, now=later + timedelta(seconds=1))
    assert reserve(store, now=later + timedelta(seconds=4)) == []
    [again] = reserve(store, now=later + timedelta(seconds=5))
    assert again.id == first.id and again.attempts == 2
    assert holders(store, now=later + timedelta(seconds=5)) == {"k": first.id}
