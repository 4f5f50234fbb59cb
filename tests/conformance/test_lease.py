"""Holding a lease: extend and its errors, complete, fail, snooze, release, fencing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tenure import (
    AlreadyDone,
    InvalidInput,
    InvalidTransition,
    Lease,
    LeaseExpired,
    LeaseLost,
    Status,
    Store,
    TaskError,
    TaskNotFound,
    WrongOwner,
    serializer,
)
from tenure.store import Completion, Failure, ReserveParams, TaskState
from tests.conformance.support import (
    ERROR,
    OWNER,
    events_since,
    in_,
    last_event_cursor,
    new,
    reach,
    reserve_one,
)
from tests.conftest import StoreFactory

# -- extend ---------------------------------------------------------------------


def test_extend_moves_expiry_and_bumps_record_ver(store: Store) -> None:
    store.task_create(new())
    task, lease = reserve_one(store, lease_seconds=5)
    before = last_event_cursor(store)
    later = in_(3)
    extended = store.lease_extend(lease, 30, now=later)
    assert extended.status is Status.RUNNING
    assert extended.record_ver == task.record_ver + 1
    assert extended.lease_token == task.lease_token  # the lease stays the same lease
    assert extended.lease_expires_at is not None
    assert abs((extended.lease_expires_at - (later + timedelta(seconds=30))).total_seconds()) < 0.01
    assert events_since(store, before) == []  # a keepalive is not a transition


def test_extend_unknown_task(store: Store) -> None:
    with pytest.raises(TaskNotFound):
        store.lease_extend(Lease("missing", OWNER, 2), 10)


def test_extend_done_task_is_already_done(store: Store) -> None:
    _, lease = reach(store, Status.DONE)
    assert lease is not None
    with pytest.raises(AlreadyDone):
        store.lease_extend(lease, 10)


def test_extend_by_another_owner_is_wrong_owner(store: Store) -> None:
    store.task_create(new())
    task, lease = reserve_one(store)
    with pytest.raises(WrongOwner):
        store.lease_extend(Lease(task.id, "intruder", lease.token), 10)
    assert store.task_get(task.id) == task


def test_extend_after_expiry_is_lease_expired(store: Store) -> None:
    store.task_create(new())
    now = in_(0)
    task, lease = reserve_one(store, lease_seconds=10, now=now)
    with pytest.raises(LeaseExpired):
        store.lease_extend(lease, 10, now=now + timedelta(seconds=11))
    assert store.task_get(task.id) == task


def test_extend_after_revoke_is_lease_lost(store: Store) -> None:
    store.task_create(new())
    task, lease = reserve_one(store)
    assert store.task_revoke(task.id, task.record_ver) is not None
    with pytest.raises(LeaseLost):
        store.lease_extend(lease, 10)


def test_extend_many_reports_each_lease_alone(store: Store) -> None:
    store.task_create_many([new() for _ in range(3)])
    (a, la), (b, lb), (c, lc) = (reserve_one(store) for _ in range(3))
    store.task_revoke(b.id, b.record_ver)
    outcomes = store.lease_extend_many([la, lb, lc, Lease("missing", OWNER, 1)], 30)
    assert isinstance(outcomes[1], LeaseLost)
    assert isinstance(outcomes[3], TaskNotFound)
    # A batch answers with states, never the payloads
    assert outcomes[0] == TaskState(a.id, Status.RUNNING, 1, a.record_ver + 1)
    assert outcomes[2] == TaskState(c.id, Status.RUNNING, 1, c.record_ver + 1)


# -- complete and fail ----------------------------------------------------------


def test_complete_stores_result_and_timings(store: Store) -> None:
    store.task_create(new())
    _, lease = reserve_one(store)
    before = last_event_cursor(store)
    done = store.task_complete(lease, {"synced": 42})
    assert (done.status, done.result, done.attempts) == (Status.DONE, {"synced": 42}, 1)
    assert done.lease_owner is None and done.lease_expires_at is None
    assert done.finished_at is not None and done.duration is not None and done.duration >= 0
    assert done.assignee == OWNER
    [event] = events_since(store, before)
    assert (event.from_status, event.to_status, event.owner) == (
        Status.RUNNING,
        Status.DONE,
        OWNER,
    )


def test_complete_twice_is_already_done(store: Store) -> None:
    store.task_create(new())
    _, lease = reserve_one(store)
    store.task_complete(lease)
    with pytest.raises(AlreadyDone):
        store.task_complete(lease, "again")


def test_complete_many_in_one_call(store: Store) -> None:
    store.task_create_many([new(data=i) for i in range(4)])
    leases = [reserve_one(store)[1] for _ in range(4)]
    outcomes = store.task_complete_many([Completion(lease, i) for i, lease in enumerate(leases)])
    assert outcomes == [
        TaskState(lease.task_id, Status.DONE, 1, lease.token + 1) for lease in leases
    ]
    stored = [store.task_get(lease.task_id) for lease in leases]
    assert [getattr(t, "result", None) for t in stored] == [0, 1, 2, 3]


def test_a_result_encoded_by_the_caller_is_written_as_it_is(store: Store) -> None:
    store.task_create_many([new(), new()])
    first, second = reserve_one(store)[1], reserve_one(store)[1]
    encoded = serializer.dumps({"rows": [1, 2]}, "result")
    # The result given beside it is not encoded again: the text is what is stored.
    [state] = store.task_complete_many([Completion(first, {"ignored": True}, encoded)])
    assert state.status is Status.DONE
    done = store.task_get(first.task_id)
    assert done is not None and done.result == {"rows": [1, 2]}
    with pytest.raises(InvalidInput) as refused:  # only text that dumps() made
        store.task_complete_many([Completion(second, 1, '{"forged": 1}')])  # type: ignore[arg-type]
    assert refused.value.field == "encoded"
    with pytest.raises(InvalidInput):  # made by hand, unmeasured: refused as well
        store.task_complete_many([Completion(second, 1, serializer.JsonText("{"))])


def test_the_store_limit_applies_to_an_encoded_result(make_store: StoreFactory) -> None:
    store = make_store(max_payload_bytes=64)
    store.task_create(new())
    _, lease = reserve_one(store)
    over = serializer.dumps("x" * 100, "result")  # checked against no limit, or a larger one
    with pytest.raises(InvalidInput, match="over the limit of 64"):
        store.task_complete_many([Completion(lease, None, over)])
    held = store.task_get(lease.task_id)
    assert held is not None and held.status is Status.RUNNING  # nothing was written


def test_fail_without_retry_ends_failed_with_error(store: Store) -> None:
    store.task_create(new(max_attempts=3))
    _, lease = reserve_one(store)
    failed = store.task_fail(lease, ERROR)
    assert failed.status is Status.FAILED and failed.error == ERROR
    assert failed.finished_at is not None


def test_fail_with_retry_goes_back_to_pending_later_and_lower(store: Store) -> None:
    store.task_create(new(max_attempts=3, priority=5))
    _, lease = reserve_one(store)
    before = last_event_cursor(store)
    now = in_(0)
    retried = store.task_fail(lease, ERROR, retry_in=30, priority_step=1, now=now)
    assert retried.status is Status.PENDING and retried.priority == 4
    assert retried.error == ERROR and retried.attempts == 1
    assert retried.run_at is not None
    assert abs((retried.run_at - (now + timedelta(seconds=30))).total_seconds()) < 0.01
    [event] = events_since(store, before)
    assert (event.from_status, event.to_status) == (Status.RUNNING, Status.PENDING)
    assert store.task_reserve(ReserveParams(owner=OWNER, now=now)) == []  # backoff not over
    again, _ = reserve_one(store, now=now + timedelta(seconds=31))
    assert again.attempts == 2


def test_fail_with_retry_but_no_attempt_left_ends_failed(store: Store) -> None:
    store.task_create(new(max_attempts=1))
    _, lease = reserve_one(store)
    assert store.task_fail(lease, ERROR, retry_in=0).status is Status.FAILED


def test_fail_many_in_one_call(store: Store) -> None:
    store.task_create_many([new(max_attempts=2) for _ in range(2)])
    leases = [reserve_one(store)[1] for _ in range(2)]
    outcomes = store.task_fail_many([Failure(leases[0], ERROR), Failure(leases[1], ERROR, 0)])
    assert outcomes == [
        TaskState(leases[0].task_id, Status.FAILED, 1, leases[0].token + 1),
        TaskState(leases[1].task_id, Status.PENDING, 1, leases[1].token + 1),
    ]


# -- snooze and release ---------------------------------------------------------


def test_snooze_pauses_without_spending_an_attempt(store: Store) -> None:
    store.task_create(new(max_attempts=2))
    _, lease = reserve_one(store)
    snoozed = store.task_snooze(lease, 45)
    assert snoozed.status is Status.SNOOZED and snoozed.attempts == 0
    assert snoozed.lease_seconds == 45 and snoozed.lease_owner is None
    assert store.task_reserve(ReserveParams(owner=OWNER, now=in_(3600))) == []  # asleep
    woken = store.task_revoke(snoozed.id, snoozed.record_ver)
    assert woken is not None and woken.status is Status.PENDING
    again, _ = reserve_one(store)
    assert again.id == snoozed.id and again.attempts == 1


def test_release_returns_to_pending_at_once_without_spending_an_attempt(store: Store) -> None:
    store.task_create(new())
    task, lease = reserve_one(store)
    released = store.task_release(lease)
    assert released.status is Status.PENDING and released.attempts == 0
    assert released.lease_owner is None
    assert reserve_one(store)[0].id == task.id


def test_cancel_held_ends_cancelled_whatever_attempts_remain(store: Store) -> None:
    store.task_create(new(max_attempts=5))
    _, lease = reserve_one(store)
    before = last_event_cursor(store)
    reason = TaskError("Cancel", "nothing left to do")
    cancelled = store.task_cancel_held(lease, reason)
    assert cancelled.status is Status.CANCELLED and cancelled.attempts == 1
    assert cancelled.error == reason and cancelled.finished_at is not None
    assert cancelled.lease_owner is None and cancelled.duration is not None
    assert [e.kind for e in events_since(store, before)] == ["cancelled"]
    assert store.task_reserve(ReserveParams(owner=OWNER, now=in_(3600))) == []
    with pytest.raises(InvalidTransition):
        store.task_cancel_held(lease, reason)  # once cancelled, the lease writes nothing


def test_progress_is_stored_on_the_running_task_without_an_event(store: Store) -> None:
    store.task_create(new(max_attempts=2))
    task, lease = reserve_one(store)
    before = last_event_cursor(store)
    state = store.task_progress(lease, 0.4, "step 2 of 5")
    assert state == TaskState(task.id, Status.RUNNING, 1, task.record_ver + 1)
    stored = store.task_get(task.id)
    assert stored is not None and (stored.progress, stored.progress_note) == (0.4, "step 2 of 5")
    store.task_progress(lease, 1)  # a note is optional: none replaces the last one
    stored = store.task_get(task.id)
    assert stored is not None and (stored.progress, stored.progress_note) == (1.0, None)
    assert events_since(store, before) == []  # not a transition
    failed = store.task_fail(lease, ERROR, retry_in=0)
    assert failed.progress == 1.0  # kept when the attempt ends
    again, _ = reserve_one(store)
    assert (again.progress, again.progress_note) == (None, None)  # a new attempt starts afresh


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), True, "0.5"])
def test_progress_outside_zero_to_one_is_refused(store: Store, bad: object) -> None:
    store.task_create(new())
    _, lease = reserve_one(store)
    with pytest.raises(InvalidInput, match="progress"):
        store.task_progress(lease, bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="note"):
        store.task_progress(lease, 0.5, "x" * 201)


def test_progress_after_the_task_ended_is_refused(store: Store) -> None:
    store.task_create(new())
    _, lease = reserve_one(store)
    done = store.task_complete(lease)
    with pytest.raises(AlreadyDone):
        store.task_progress(lease, 0.9)
    assert store.task_get(done.id) == done


# -- fencing --------------------------------------------------------------------


HOLDER_WRITES = {
    "extend": lambda s, lease: s.lease_extend(lease, 10),
    "complete": lambda s, lease: s.task_complete(lease, "zombie"),
    "fail": lambda s, lease: s.task_fail(lease, ERROR),
    "snooze": lambda s, lease: s.task_snooze(lease, 10),
    "release": lambda s, lease: s.task_release(lease),
    "cancel_held": lambda s, lease: s.task_cancel_held(lease, ERROR),
    "progress": lambda s, lease: s.task_progress(lease, 0.5, "half"),
}


@pytest.mark.parametrize("write", sorted(HOLDER_WRITES))
def test_revoked_holder_changes_nothing(store: Store, write: str) -> None:
    store.task_create(new(max_attempts=3))
    task, old = reserve_one(store)
    store.task_revoke(task.id, task.record_ver)
    new_owner_task, _ = reserve_one(store, owner="worker-2")
    with pytest.raises(LeaseLost):
        HOLDER_WRITES[write](store, old)
    assert store.task_get(task.id) == new_owner_task


@pytest.mark.parametrize("write", sorted(HOLDER_WRITES))
def test_old_lease_of_the_same_owner_is_fenced(store: Store, write: str) -> None:
    store.task_create(new(max_attempts=3))
    task, old = reserve_one(store)
    store.task_revoke(task.id, task.record_ver)
    again, fresh = reserve_one(store)  # same owner, new lease
    assert fresh.token > old.token
    with pytest.raises(LeaseLost):
        HOLDER_WRITES[write](store, old)
    assert store.task_get(task.id) == again


@pytest.mark.parametrize("write", sorted(HOLDER_WRITES))
def test_cancelled_task_fences_its_holder(store: Store, write: str) -> None:
    store.task_create(new())
    task, lease = reserve_one(store)
    cancelled = store.task_cancel(task.id)
    with pytest.raises(LeaseLost):
        HOLDER_WRITES[write](store, lease)
    assert store.task_get(task.id) == cancelled


def test_holder_write_after_its_own_failure_is_invalid(store: Store) -> None:
    store.task_create(new())
    _, lease = reserve_one(store)
    failed = store.task_fail(lease, ERROR)
    with pytest.raises(InvalidTransition) as raised:
        store.task_complete(lease)
    assert not isinstance(raised.value, AlreadyDone)
    assert store.task_get(failed.id) == failed
