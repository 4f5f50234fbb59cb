"""Counting, the store clock, retention, the worker registry and leadership."""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tenure import InvalidInput, LeaseLost, LockPhase, Status, Store, open_store
from tenure.maintenance.scheduler import Scheduler
from tenure.store import TaskFilter, UniqueRule
from tenure.store.types import LeaderLease, WorkerInfo
from tests.conformance.support import FakeClock, events_since, new, reach

# -- counting and the clock ------------------------------------------------------


def test_count_matches_filters(store: Store) -> None:
    store.task_create_many([new(topic="a") for _ in range(3)] + [new(topic="b")])
    reach(store, Status.DONE)
    assert store.task_count() == 5
    assert store.task_count(TaskFilter(topic="a")) == 3
    assert store.task_count(TaskFilter(status=Status.DONE)) == 1
    assert store.task_count(TaskFilter(status=Status.PENDING, topic="b")) == 1
    with pytest.raises(InvalidInput):
        store.task_count(TaskFilter(status="nope"))  # type: ignore[arg-type]


def test_clock_now_is_an_aware_current_time(store: Store) -> None:
    now = store.clock_now()
    assert now.tzinfo is not None
    assert abs((now - datetime.now(UTC)).total_seconds()) < 5


# -- retention -------------------------------------------------------------------


def test_prune_removes_only_finished_tasks_older_than_the_retention(store: Store) -> None:
    old = datetime.now(UTC) - timedelta(days=10)
    tasks = store.task_create_many([new() for _ in range(4)], now=old)
    done, _ = reach(store, Status.DONE)  # finished now: within the retention
    for task in tasks[:3]:
        store.task_cancel(task.id, now=old)
    assert store.task_prune(7 * 86400) == 3
    assert store.task_prune(7 * 86400) == 0
    assert {t.id for t in store.task_list().tasks} == {tasks[3].id, done.id}  # pending stays


def test_prune_respects_the_limit(store: Store) -> None:
    old = datetime.now(UTC) - timedelta(hours=2)
    tasks = store.task_create_many([new() for _ in range(5)], now=old)
    for task in tasks:
        store.task_cancel(task.id, now=old)
    assert store.task_prune(3 * 3600) == 0
    assert store.task_prune(3600, limit=2) == 2
    assert store.task_count() == 3


def test_event_prune(store: Store) -> None:
    old = datetime.now(UTC) - timedelta(hours=2)
    store.task_create_many([new() for _ in range(3)], now=old)
    recent = store.task_create(new())
    assert store.event_prune(3600) == 3
    assert [e.task_id for e in events_since(store, None)] == [recent.id]


def test_the_scheduler_cycle_expires_stale_unique_locks_and_counts_them(store: Store) -> None:
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    stale = UniqueRule(key="stale", lock=LockPhase.UNTIL_EXECUTED, ttl=5)
    store.task_create(new(topic="u", unique=stale), now=an_hour_ago)
    live_rule = UniqueRule(key="live", lock=LockPhase.UNTIL_EXECUTED, ttl=600)
    live = store.task_create(new(topic="u", unique=live_rule))
    report = Scheduler(store, "s", clock=FakeClock()).run_once()
    assert report.leader and report.expired_locks == 1
    # Seen from an hour ago the stale lock would still be listed: it is gone.
    left = store.unique_lock_list(now=an_hour_ago)
    assert [(lock.key, lock.task_id) for lock in left] == [("live", live.id)]


# -- the worker registry ---------------------------------------------------------


def info(worker_id: str = "w1", held: int = 0) -> WorkerInfo:
    return WorkerInfo(
        id=worker_id,
        host="h",
        pid=42,
        topics=("a", "b"),
        tags=("gpu",),
        pool="threads",
        concurrency=4,
        held=held,
    )


def test_worker_beat_registers_then_updates(store: Store) -> None:
    first = store.worker_beat(info(held=0))
    assert first.started_at is not None and first.last_seen is not None
    later = first.last_seen + timedelta(seconds=5)
    second = store.worker_beat(info(held=3), now=later)
    assert (second.held, second.started_at, second.last_seen) == (3, first.started_at, later)
    assert [w.id for w in store.worker_list()] == ["w1"]
    listed = store.worker_list()[0]
    assert (listed.topics, listed.tags, listed.pool, listed.concurrency) == (
        ("a", "b"),
        ("gpu",),
        "threads",
        4,
    )


def test_worker_remove_and_prune(store: Store) -> None:
    base = datetime(2030, 1, 1, tzinfo=UTC)
    store.worker_beat(info("quiet"), now=base)
    store.worker_beat(info("alive"), now=base + timedelta(seconds=50))
    store.worker_beat(info("leaving"), now=base + timedelta(seconds=50))
    assert store.worker_remove("leaving") is True
    assert store.worker_remove("leaving") is False
    assert store.worker_prune(30, now=base + timedelta(seconds=60)) == 1
    assert [w.id for w in store.worker_list()] == ["alive"]


# -- leadership -------------------------------------------------------------------


def test_only_one_owner_acquires_a_leadership(store: Store) -> None:
    lease = store.leader_acquire("scheduler", "a", 10)
    assert lease is not None and lease.owner == "a"
    assert store.leader_acquire("scheduler", "b", 10) is None
    assert store.leader_acquire("other", "b", 10) is not None
    state = store.leader_get("scheduler")
    assert state is not None and (state.owner, state.token) == ("a", lease.token)


def test_extend_bumps_record_ver_and_revoke_is_compare_and_set(store: Store) -> None:
    lease = store.leader_acquire("s", "a", 10)
    assert lease is not None
    seen = store.leader_get("s")
    assert seen is not None
    extended = store.leader_extend(lease, 10)
    assert extended.record_ver == seen.record_ver + 1
    assert store.leader_revoke("s", seen.record_ver) is False  # stale: the leader is alive
    assert store.leader_revoke("s", extended.record_ver) is True
    with pytest.raises(LeaseLost):
        store.leader_extend(lease, 10)  # the old leader is fenced
    newer = store.leader_acquire("s", "b", 10)
    assert newer is not None and newer.token > lease.token
    with pytest.raises(LeaseLost):
        store.leader_extend(LeaderLease("s", "a", newer.token), 10)  # wrong owner


def test_resign_vacates(store: Store) -> None:
    lease = store.leader_acquire("s", "a", 10)
    assert lease is not None
    assert store.leader_resign(lease) is True
    assert store.leader_resign(lease) is False
    state = store.leader_get("s")
    assert state is not None and state.owner is None
    assert store.leader_get("never") is None
    assert store.leader_acquire("s", "b", 10) is not None


def acquire_in_process(url: str, owner: str, start: multiprocessing.Event, out: str) -> None:  # type: ignore[valid-type]
    store = open_store(url)
    start.wait()  # type: ignore[attr-defined]
    won = store.leader_acquire("race", owner, 10) is not None
    store.close()
    Path(out).write_text("won" if won else "lost")


@pytest.mark.slow
def test_processes_racing_for_leadership_elect_exactly_one(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    outs = [tmp_path / f"o{i}" for i in range(4)]
    procs = [
        ctx.Process(target=acquire_in_process, args=(store_url, f"p{i}", start, str(out)))
        for i, out in enumerate(outs)
    ]
    for proc in procs:
        proc.start()
    start.set()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    assert sorted(out.read_text() for out in outs) == ["lost", "lost", "lost", "won"]
