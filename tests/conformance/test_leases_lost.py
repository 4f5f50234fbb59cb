"""A holder asks which of its leases are lost, and is woken when one may be:
how a cancel reaches a running task within about a second (the worker's
cancel watch), on every store."""

from __future__ import annotations

import threading

import pytest

from tenure import InvalidInput, Lease, Store
from tests.conformance.support import new, reserve_one

WAKE_WITHIN = 5.0
"""Seconds a taking may take to wake a subscriber: generous, for a loaded
machine; the watch's own latency is measured by the worker tests."""


def test_the_leases_lost_are_those_no_longer_running_under_their_lease(store: Store) -> None:
    # The last may run again once revoked; the others end when taken.
    store.task_create_many([new() for _ in range(5)] + [new(max_attempts=3)])
    held = [reserve_one(store) for _ in range(6)]
    (kept, kept_lease), (cancelled, a), (revoked, b), (done, c), (_, d), (again, e) = held
    store.task_cancel(cancelled.id)
    store.task_revoke(revoked.id, revoked.record_ver)
    store.task_complete(c, "ok")
    wrong_owner = Lease(d.task_id, "someone-else", d.token)
    store.task_revoke(again.id, again.record_ver)
    _, fresh = reserve_one(store)  # the same owner again, under a newer token
    assert fresh.task_id == again.id and fresh.token > e.token
    unknown = Lease("no-such-task", kept_lease.owner, 1)

    asked = [kept_lease, a, b, c, wrong_owner, e, fresh, unknown]
    lost = store.leases_lost(asked)
    expected = [a.task_id, b.task_id, done.id, d.task_id, e.task_id, unknown.task_id]
    assert sorted(lost) == sorted(expected)
    assert kept.id not in lost
    assert store.leases_lost([]) == []


@pytest.mark.parametrize("bad", ["not-a-list", [object()], None])
def test_leases_lost_refuses_what_is_not_leases(store: Store, bad: object) -> None:
    with pytest.raises(InvalidInput):
        store.leases_lost(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("take", ["cancel", "revoke"])
def test_a_running_task_taken_from_its_holder_wakes_lease_subscribers(
    store: Store, take: str
) -> None:
    store.task_create(new())
    task, lease = reserve_one(store)
    wake = threading.Event()
    subscription = store.lease_notify(wake)
    try:
        # A first look is asked for before lease_notify returns (a listener
        # that has just connected); what counts is what the taking sets.
        wake.clear()
        if take == "cancel":
            store.task_cancel(task.id)
        else:
            store.task_revoke(task.id, task.record_ver)
        assert wake.wait(WAKE_WITHIN), f"a {take} of a running task woke no one"
        assert store.leases_lost([lease]) == [task.id]
    finally:
        subscription()
