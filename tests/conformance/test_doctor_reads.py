"""What ``tenure doctor`` reads of every store: recent run times per task name,
the scheduler's last sign of life, the database's settings and tenure's tables."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tenure import InvalidInput, Store
from tenure.maintenance.leader import SCHEDULER
from tenure.store import ReserveParams
from tenure.store.types import RunTimes
from tests.conformance.support import lease_of, new


def run(store: Store, name: str, seconds: float, lease: float = 30.0) -> None:
    """One task of ``name`` created, run under ``lease`` and done ``seconds`` later."""
    store.task_create(new(name=name))
    [task] = store.task_reserve(ReserveParams(owner="w", lease_seconds=lease))
    assert task.started_at is not None
    done_at = task.started_at + timedelta(seconds=seconds)
    store.task_complete(lease_of(task, "w"), None, now=done_at)


def test_run_times_are_the_p99_and_shortest_lease_of_recent_runs_per_name(store: Store) -> None:
    for seconds in range(1, 101):  # 1 s to 100 s: the 99th by nearest rank is 99 s
        run(store, "slow", float(seconds), lease=60.0 if seconds % 2 else 45.0)
    run(store, "quick", 0.5)
    store.task_cancel(store.task_create(new(name="never")).id)  # cancelled: no run
    times = store.task_run_times()
    assert [(t.name, t.runs, t.lease) for t in times] == [("quick", 1, 30.0), ("slow", 100, 45.0)]
    assert times[0].p99 == pytest.approx(0.5, abs=1e-3)
    assert times[1].p99 == pytest.approx(99.0, abs=1e-3)


def test_run_times_look_at_the_newest_finished_tasks_only(store: Store) -> None:
    run(store, "old", 1.0)  # it finished before the others: each starts after it, runs longer
    for _ in range(3):
        run(store, "new", 2.0)
    [recent] = store.task_run_times(sample=3)
    assert (recent.name, recent.runs) == ("new", 3)
    assert store.task_run_times() != [recent]
    assert isinstance(recent, RunTimes)
    with pytest.raises(InvalidInput):
        store.task_run_times(sample=0)


def test_leader_silence_is_none_unless_held_and_grows_from_the_last_extension(
    store: Store,
) -> None:
    assert store.leader_silence(SCHEDULER) is None
    lease = store.leader_acquire(SCHEDULER, "s-1", 10.0)
    assert lease is not None
    silence = store.leader_silence(SCHEDULER)
    assert silence is not None and 0 <= silence < 5
    store.leader_resign(lease)
    assert store.leader_silence(SCHEDULER) is None


def test_database_settings_name_what_durability_capacity_and_upkeep_depend_on(store: Store) -> None:
    settings = store.database_settings()
    if store.connections_at_most is None:  # SQLite
        assert settings == {"journal_mode": "wal", "synchronous": "full"}
        assert store.table_keys() == []
        return
    assert {"fsync", "synchronous_commit", "max_connections", "autovacuum"} <= settings.keys()
    assert int(settings["max_connections"]) > 0
    assert store.connections_at_most > 2  # the pool's most, and two listeners
    tables = {table.name: table for table in store.table_keys()}
    assert {"tasks", "events", "workers", "leaders", "tenure_migrations"} <= tables.keys()
    assert tables["tasks"].primary_key and tables["tasks"].replicable
    assert all(table.autovacuum for table in tables.values())  # no table turns it off
    assert {table.schema for table in tables.values()} == {"tenure"}
