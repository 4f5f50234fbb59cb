"""A database published for logical replication (``CREATE PUBLICATION … FOR
ALL TABLES``: change data capture, a managed database's replica or upgrade
tooling) refuses deletes and updates on a table without a replica identity.
Every table of tenure's has a primary key, so every step of the scheduler's
cycle, folding the tallies and pruning included, works there."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg

from tenure import Status
from tenure.maintenance.scheduler import Scheduler
from tenure.store import open_store
from tests.conformance.support import FakeClock, new, reach

DAY = 86_400.0


def test_every_scheduler_step_works_in_a_published_database(blank_postgres_url: str) -> None:
    with open_store(blank_postgres_url) as store:
        with psycopg.connect(blank_postgres_url, autocommit=True) as conn:
            conn.execute("CREATE PUBLICATION everything FOR ALL TABLES")
        # Every table of tenure's replicable: doctor's own read of the catalog.
        assert [table.name for table in store.table_keys() if not table.replicable] == []
        two_days_ago = datetime.now(UTC) - timedelta(days=2)
        for task in store.task_create_many([new() for _ in range(5)], now=two_days_ago):
            store.task_cancel(task.id, now=two_days_ago)
        reach(store, Status.DONE)  # finished now: kept
        store.task_create(new())  # pending: kept
        scheduler = Scheduler(store, "s", retention=DAY, clock=FakeClock())
        report = scheduler.run_once()
        assert report.failed_steps == []
        assert (report.pruned_tasks, report.pruned_events) == (5, 10)
        assert store.task_count() == 2
        assert store.task_stats().total(Status.PENDING) == 1  # the tallies still add up
        assert scheduler.run_once().failed_steps == []
