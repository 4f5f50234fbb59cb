"""Leadership and the scheduler cycle, on each store, with
controlled monotonic clocks (no sleeps)."""

from __future__ import annotations

from tenure import Status, Store
from tenure.maintenance.leader import Leadership
from tenure.maintenance.scheduler import Scheduler
from tests.conformance.support import FakeClock, new, reserve_one


def pair(store: Store, lease: float = 10) -> tuple[Leadership, Leadership, FakeClock, FakeClock]:
    a_clock, b_clock = FakeClock(), FakeClock()
    a = Leadership(store, "a", lease_seconds=lease, clock=a_clock)
    b = Leadership(store, "b", lease_seconds=lease, clock=b_clock)
    return a, b, a_clock, b_clock


def test_one_leader_and_a_standby(store: Store) -> None:
    a, b, _, _ = pair(store)
    assert a.tick() is True
    assert b.tick() is False
    assert a.is_leader and not b.is_leader


def test_a_live_leader_is_never_revoked_whatever_the_standbys_clock_says(store: Store) -> None:
    a, b, a_clock, b_clock = pair(store)
    a.tick()
    for _ in range(10):
        b.tick()
        b_clock.advance(3600)  # the standby's clock races ahead by hours
        a.tick()  # the leader keeps extending
        a_clock.advance(1)
    assert b.tick() is False
    assert a.tick() is True


def test_a_silent_leader_is_replaced_after_one_lease(store: Store) -> None:
    a, b, _, b_clock = pair(store, lease=10)
    a.tick()
    b.tick()  # sees the leader's version
    b_clock.advance(9.9)
    assert b.tick() is False
    b_clock.advance(0.2)
    assert b.tick() is True  # revoked the silent leader and took over
    assert a.tick() is False  # the old leader is fenced: it steps down
    assert not a.is_leader


def test_a_leader_past_its_own_deadline_does_not_act(store: Store) -> None:
    a, _, a_clock, _ = pair(store, lease=10)
    a.tick()
    a_clock.advance(10.5)  # e.g. paused: no extension within the lease
    assert not a.is_leader  # steps between extensions check this
    assert a.tick() is True  # nobody took over: the extension succeeds again


def test_resign_hands_over_at_once(store: Store) -> None:
    a, b, _, _ = pair(store)
    a.tick()
    a.resign()
    assert b.tick() is True


def test_only_the_leader_runs_the_cycle_and_it_recovers_dead_leases(store: Store) -> None:
    clocks = [FakeClock(), FakeClock()]
    schedulers = [Scheduler(store, f"s{i}", clock=clocks[i], leader_lease=10) for i in (0, 1)]
    store.task_create(new(max_attempts=2))
    task, _ = reserve_one(store, lease_seconds=5)
    reports = [s.run_once() for s in schedulers]  # the leader marks the task
    assert [r.leader for r in reports] == [True, False]
    for clock in clocks:
        clock.advance(4)
    assert schedulers[0].run_once().revoked == []
    for clock in clocks:
        clock.advance(2)
    [revoked] = schedulers[0].run_once().revoked
    assert revoked.id == task.id and revoked.status is Status.PENDING
    assert schedulers[1].run_once().leader is False


def test_supervision_between_cycles_recovers_without_waiting_for_the_next_cycle(
    store: Store,
) -> None:
    clock = FakeClock()
    leader = Scheduler(store, "s0", clock=clock, interval=1.0)
    standby = Scheduler(store, "s1", clock=FakeClock(), interval=1.0)
    assert leader.supervise_every == 0.5
    store.task_create(new(max_attempts=2))
    task, _ = reserve_one(store, lease_seconds=2)
    assert leader.run_once().leader and not standby.run_once().leader  # marks the task
    clock.advance(2.1)
    [revoked] = leader.supervise_between_cycles()
    assert revoked.id == task.id and revoked.status is Status.PENDING
    # A standby never supervises, between cycles or otherwise.
    assert standby.supervise_between_cycles() == []


def test_a_standby_watches_leases_so_a_failover_does_not_restart_the_wait(
    store: Store,
) -> None:
    leader_clock, standby_clock = FakeClock(), FakeClock()
    leader = Scheduler(store, "s0", clock=leader_clock, leader_lease=10)
    standby = Scheduler(store, "s1", clock=standby_clock, leader_lease=10)
    assert standby.watch_every == 5
    store.task_create(new(max_attempts=2))
    task, _ = reserve_one(store, lease_seconds=8)  # its holder's last keepalive
    assert leader.run_once().leader
    assert not standby.run_once().leader  # stands by, and marks the task
    # The leader dies with the task's holder: the standby takes over after the
    # leader lease (10 s), when the task's lease (8 s) has run out already.
    standby_clock.advance(10.1)
    report = standby.run_once()
    assert report.leader
    assert [t.id for t in report.revoked] == [task.id]


def test_a_standby_never_revokes(store: Store) -> None:
    leader_clock, standby_clock = FakeClock(), FakeClock()
    leader = Scheduler(store, "s0", clock=leader_clock, leader_lease=10)
    standby = Scheduler(store, "s1", clock=standby_clock, leader_lease=10)
    store.task_create(new(max_attempts=2))
    task, _ = reserve_one(store, lease_seconds=2)
    assert leader.run_once().leader
    standby.run_once()
    for _ in range(4):  # the leader stays alive; the standby's clock runs far past the lease
        leader.run_once()
        leader_clock.advance(1)
        standby_clock.advance(3)
        assert standby.run_once().revoked == []
    current = store.task_get(task.id)
    assert current is not None and current.status is Status.PENDING  # the leader's doing
