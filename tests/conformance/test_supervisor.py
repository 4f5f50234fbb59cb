"""The lease supervisor against each store, on a controlled monotonic clock."""

from __future__ import annotations

import time

import pytest

from tenure import Status, Store
from tenure.maintenance.supervisor import Supervisor
from tenure.store import ReserveParams
from tests.conformance.support import FakeClock, new, reserve_one


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def supervisor(store: Store, clock: FakeClock) -> Supervisor:
    return Supervisor(store, clock=clock)


def test_dead_lease_is_revoked_after_one_lease_time(
    store: Store, supervisor: Supervisor, clock: FakeClock
) -> None:
    store.task_create(new(max_attempts=3))
    task, _ = reserve_one(store, lease_seconds=10)
    assert supervisor.run_once().revoked == []
    clock.advance(9.9)
    assert supervisor.run_once().revoked == []
    clock.advance(0.2)
    [revoked] = supervisor.run_once().revoked
    assert revoked.id == task.id and revoked.status is Status.PENDING
    assert supervisor.marks == {}


def test_live_lease_is_never_revoked_however_far_the_clock_runs(
    store: Store, supervisor: Supervisor, clock: FakeClock
) -> None:
    store.task_create(new())
    task, lease = reserve_one(store, lease_seconds=10)
    for _ in range(20):
        supervisor.run_once()
        store.lease_extend(lease, 10)  # the holder's keepalive
        clock.advance(3600)  # hours pass between cycles: only versions matter
    assert supervisor.run_once().revoked == []
    current = store.task_get(task.id)
    assert current is not None and current.status is Status.RUNNING


def test_revoke_that_loses_the_race_changes_nothing(
    store: Store, supervisor: Supervisor, clock: FakeClock
) -> None:
    store.task_create(new())
    task, lease = reserve_one(store, lease_seconds=10)
    supervisor.mark()
    clock.advance(11)
    alive = store.lease_extend(lease, 10)  # lands between mark and sweep
    report = supervisor.sweep()
    assert report.revoked == [] and report.lost_races == 1
    assert store.task_get(task.id) == alive


def test_snoozed_task_wakes_after_its_snooze(
    store: Store, supervisor: Supervisor, clock: FakeClock
) -> None:
    store.task_create(new())
    _, lease = reserve_one(store)
    snoozed = store.task_snooze(lease, 60)
    supervisor.run_once()
    clock.advance(59)
    assert supervisor.run_once().revoked == []
    clock.advance(2)
    [woken] = supervisor.run_once().revoked
    assert woken.id == snoozed.id and woken.status is Status.PENDING


def test_last_attempt_of_a_dead_worker_fails(
    store: Store, supervisor: Supervisor, clock: FakeClock
) -> None:
    store.task_create(new(max_attempts=1))
    reserve_one(store, lease_seconds=5)
    supervisor.run_once()
    clock.advance(6)
    [failed] = supervisor.run_once().revoked
    assert failed.status is Status.FAILED
    assert failed.error is not None and failed.error.type == "LeaseExpired"


def test_marks_are_forgotten_when_tasks_finish_and_pages_are_followed(
    store: Store, clock: FakeClock
) -> None:
    supervisor = Supervisor(store, clock=clock, page_size=3)
    store.task_create_many([new() for _ in range(7)])
    held = store.task_reserve(ReserveParams(owner="w", limit=7, lease_seconds=10))
    assert supervisor.run_once().watched == 7
    for task in held[:4]:
        store.task_cancel(task.id)
    assert supervisor.run_once().watched == 3
    assert len(supervisor.marks) == 3


def test_supervisor_reads_no_wall_clock(
    store: Store, supervisor: Supervisor, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.task_create(new(max_attempts=2))
    reserve_one(store, lease_seconds=10)
    supervisor.mark()
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 7200)  # two hours ahead
    assert supervisor.sweep().revoked == []
    monkeypatch.setattr(time, "time", lambda: real() - 7200)  # two hours behind
    clock.advance(10.5)
    assert len(supervisor.sweep().revoked) == 1
