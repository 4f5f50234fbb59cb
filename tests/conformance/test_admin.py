"""Supervision and administration: revoke by record_ver, cancel, retry."""

from __future__ import annotations

import pytest

from tenure import AlreadyDone, InvalidTransition, Status, Store, TaskNotFound
from tests.conformance.support import (
    ERROR,
    events_since,
    last_event_cursor,
    new,
    reach,
    reserve_one,
)


def test_revoke_with_current_record_ver_returns_task_to_pending(store: Store) -> None:
    store.task_create(new(max_attempts=2))
    task, _ = reserve_one(store)
    revoked = store.task_revoke(task.id, task.record_ver)
    assert revoked is not None and revoked.status is Status.PENDING
    assert revoked.lease_owner is None and revoked.lease_token is None
    assert revoked.assignee == task.assignee  # who last held it stays visible
    assert revoked.attempts == 1  # a lost attempt still counts


def test_revoke_with_stale_record_ver_changes_nothing(store: Store) -> None:
    store.task_create(new())
    task, lease = reserve_one(store)
    alive = store.lease_extend(lease, 30)  # the keepalive moved record_ver on
    before = last_event_cursor(store)
    assert store.task_revoke(task.id, task.record_ver) is None
    assert store.task_get(task.id) == alive
    assert events_since(store, before) == []


def test_revoke_of_last_attempt_fails_the_task(store: Store) -> None:
    store.task_create(new(max_attempts=1))
    task, _ = reserve_one(store)
    before = last_event_cursor(store)
    revoked = store.task_revoke(task.id, task.record_ver)
    assert revoked is not None and revoked.status is Status.FAILED
    assert revoked.error is not None and revoked.error.type == "LeaseExpired"
    [event] = events_since(store, before)
    assert (event.from_status, event.to_status) == (Status.RUNNING, Status.FAILED)


def test_revoke_wakes_a_snoozed_task(store: Store) -> None:
    snoozed, _ = reach(store, Status.SNOOZED)
    woken = store.task_revoke(snoozed.id, snoozed.record_ver)
    assert woken is not None and woken.status is Status.PENDING


def test_revoke_unknown_or_not_leased_is_none(store: Store) -> None:
    pending = store.task_create(new())
    assert store.task_revoke("missing", 1) is None
    assert store.task_revoke(pending.id, pending.record_ver) is None


def test_cancel_pending(store: Store) -> None:
    task = store.task_create(new())
    cancelled = store.task_cancel(task.id)
    assert cancelled.status is Status.CANCELLED and cancelled.finished_at is not None


def test_cancel_running_ends_the_lease(store: Store) -> None:
    store.task_create(new())
    task, _ = reserve_one(store)
    cancelled = store.task_cancel(task.id)
    assert cancelled.lease_owner is None and cancelled.lease_token is None


def test_cancel_done_is_already_done(store: Store) -> None:
    done, _ = reach(store, Status.DONE)
    with pytest.raises(AlreadyDone):
        store.task_cancel(done.id)


def test_cancel_unknown(store: Store) -> None:
    with pytest.raises(TaskNotFound):
        store.task_cancel("missing")


def test_retry_failed_gives_fresh_attempts(store: Store) -> None:
    store.task_create(new(max_attempts=1))
    _, lease = reserve_one(store)
    failed = store.task_fail(lease, ERROR)
    retried = store.task_retry(failed.id)
    assert retried.status is Status.PENDING and retried.attempts == 0
    again, _ = reserve_one(store)
    assert again.id == failed.id and again.attempts == 1


def test_retry_cancelled(store: Store) -> None:
    cancelled, _ = reach(store, Status.CANCELLED)
    assert store.task_retry(cancelled.id).status is Status.PENDING


def test_retry_pending_is_invalid(store: Store) -> None:
    task = store.task_create(new())
    with pytest.raises(InvalidTransition):
        store.task_retry(task.id)
    with pytest.raises(TaskNotFound):
        store.task_retry("missing")
