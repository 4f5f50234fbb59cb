"""Retention's pace: how long the scheduler takes to clear a backlog of
finished tasks and their events, all older than the retention, on each store.

The backlog is what a scheduler finds after a day away, or after its retention
was shortened: ``--tasks`` tasks finished two hours ago, three events each. The
scheduler then runs its cycles back to back (as it would once a second), and
the run reports the cycles taken, the time spent pruning, and the rows deleted
per second of it. Pruned by a fixed 10,000 tasks and 10,000 events a minute,
as before retention kept pace, the same backlog took a minute per 10,000 events.

    python -m benchmarks.retention [--tasks 100000] [--postgres URL]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

from tenure import Store, open_store
from tenure.maintenance.scheduler import Scheduler
from tenure.store import Completion, NewTask, ReserveParams
from tenure.task import Lease

CHUNK = 1000
HOUR = 3600.0


def backlog(store: Store, count: int) -> None:
    """``count`` tasks created, run and done two hours ago."""
    old = datetime.now(UTC) - timedelta(hours=2)
    params = ReserveParams(owner="bench", lease_seconds=600, limit=CHUNK)
    for start in range(0, count, CHUNK):
        size = min(CHUNK, count - start)
        store.task_create_many([NewTask(topic="t", name="n") for _ in range(size)], now=old)
        held = store.task_reserve(params)
        leases = [Lease(task.id, "bench", task.lease_token or 0) for task in held]
        store.task_complete_many([Completion(lease, None) for lease in leases], now=old)


def clear(store: Store) -> dict[str, float]:
    """Run the scheduler's cycles until nothing older than the retention is left."""
    scheduler = Scheduler(store, "bench", retention=HOUR)
    cycles, pruned, spent = 0, 0, 0.0
    while True:
        began = time.perf_counter()
        report = scheduler.run_once()
        spent += time.perf_counter() - began
        cycles += 1
        pruned += report.pruned_tasks + report.pruned_events
        if report.backlog is not None and report.backlog.rows == 0:
            break
    return {"cycles": cycles, "rows": pruned, "seconds": round(spent, 2),
            "rows_per_second": round(pruned / spent)}  # fmt: skip


def run(url: str, count: int) -> dict[str, float]:
    with open_store(url) as store:
        backlog(store, count)
        found = store.retention_backlog(HOUR, cap=10 * count)
        return {"tasks_left": found.tasks, "events_left": found.events, **clear(store)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        results["sqlite"] = run(f"sqlite:///{Path(folder) / 'retention.db'}", args.tasks)
    name = f"tenure_retention_{int(time.time())}"
    with psycopg.connect(args.postgres, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        base = args.postgres.rsplit("/", 1)[0]
        results["postgres"] = run(f"{base}/{name}", args.tasks)
    finally:
        with psycopg.connect(args.postgres, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print(json.dumps({"tasks": args.tasks, **results}, indent=2))


if __name__ == "__main__":
    main()
