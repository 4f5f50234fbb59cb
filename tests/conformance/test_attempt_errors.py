"""Every attempt's error: a task keeps the error of each attempt that ended in
one (the last 20), stamped with its attempt and time, even when attempts fail
alike; the event of each transition that wrote an error names it."""

from __future__ import annotations

from tenure import Status, Store, TaskError
from tenure.store import ReserveParams
from tenure.task import LockPhase, OnConflict, UniqueRule
from tests.conformance.support import (
    ERROR,
    events_since,
    last_event_cursor,
    new,
    reserve_one,
)


def fail_attempt(store: Store, *, retry: bool = True, error: TaskError = ERROR) -> None:
    _, lease = reserve_one(store)
    store.task_fail(lease, error, retry_in=0 if retry else None)


def test_a_task_failed_three_times_keeps_three_errors(store: Store) -> None:
    task = store.task_create(new(max_attempts=3))
    for _ in range(3):
        fail_attempt(store)  # the same error each time
    failed = store.task_get(task.id)
    assert failed is not None and failed.status is Status.FAILED
    assert [(e.attempt, e.type, e.message) for e in failed.errors] == [
        (1, "ValueError", "boom"),
        (2, "ValueError", "boom"),
        (3, "ValueError", "boom"),
    ]
    assert failed.errors[-1].traceback == ERROR.traceback
    moments = [e.at for e in failed.errors]
    assert None not in moments and moments == sorted(moments)  # type: ignore[type-var]
    assert failed.error == ERROR and failed.error.attempt == 3


def test_only_the_last_twenty_errors_are_kept_with_their_tracebacks_cut(store: Store) -> None:
    task = store.task_create(new(max_attempts=25))
    long = TaskError("OSError", "disk", "x" * 20_000)
    for _ in range(24):
        fail_attempt(store, error=long)
    fail_attempt(store, retry=False, error=TaskError("KeyError", "last", "y" * 20_000))
    ended = store.task_get(task.id)
    assert ended is not None
    assert [e.attempt for e in ended.errors] == list(range(6, 26))
    assert all(len(e.traceback) == 8192 for e in ended.errors)
    assert ended.errors[-1].type == "KeyError"
    assert ended.error is not None and len(ended.error.traceback) == 20_000  # whole


def test_a_success_and_a_release_write_no_error(store: Store) -> None:
    task = store.task_create(new(max_attempts=3))
    fail_attempt(store)
    _, lease = reserve_one(store)
    store.task_release(lease)
    _, lease = reserve_one(store)
    done = store.task_complete(lease, 1)
    assert [e.attempt for e in done.errors] == [1]
    assert store.task_get(task.id) == done


def test_the_events_of_a_retry_and_a_failure_carry_the_error(store: Store) -> None:
    store.task_create(new(max_attempts=2))
    before = last_event_cursor(store)
    fail_attempt(store)
    _, lease = reserve_one(store)
    store.task_release(lease)
    fail_attempt(store, retry=False, error=TaskError("KeyError", "gone"))
    said = [
        (e.from_status, e.to_status, e.error_type, e.error_message)
        for e in events_since(store, before)
    ]
    assert said == [
        (Status.PENDING, Status.RUNNING, None, None),
        (Status.RUNNING, Status.PENDING, "ValueError", "boom"),
        (Status.PENDING, Status.RUNNING, None, None),
        (Status.RUNNING, Status.PENDING, None, None),  # released: no error
        (Status.PENDING, Status.RUNNING, None, None),
        (Status.RUNNING, Status.FAILED, "KeyError", "gone"),
    ]


def test_a_lease_lost_on_the_last_attempt_and_a_self_cancel_are_kept(store: Store) -> None:
    lost = store.task_create(new(topic="lost"))
    running, _ = reserve_one(store, topics=["lost"])
    store.task_revoke(running.id, running.record_ver)
    cancelled = store.task_create(new(topic="own"))
    _, lease = reserve_one(store, topics=["own"])
    store.task_cancel_held(lease, TaskError("Cancel", "not needed"))
    assert [e.type for e in store.task_get(lost.id).errors] == ["LeaseExpired"]  # type: ignore[union-attr]
    [error] = store.task_get(cancelled.id).errors  # type: ignore[union-attr]
    assert (error.attempt, error.message) == (1, "not needed")


def test_a_unique_lock_held_at_start_is_kept_as_the_attempts_error(store: Store) -> None:
    rule = UniqueRule("k", LockPhase.WHILE_EXECUTING, OnConflict.RAISE, retry_in=0)
    holder = store.task_create(new(topic="u", unique=rule))
    second = store.task_create(new(topic="v", unique=rule, max_attempts=2))
    reserve_one(store, topics=["u"])
    assert store.task_reserve(ReserveParams(owner="w2", topics=["v"])) == []  # refused at start
    refused = store.task_get(second.id)
    assert refused is not None and refused.status is Status.PENDING
    assert [(e.type, e.attempt) for e in refused.errors] == [("UniqueConflict", 1)]
    assert holder.id in refused.errors[0].message
