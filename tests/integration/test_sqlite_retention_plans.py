"""Retention's reads on SQLite walk the index of finished tasks by their end:
a prune batch examines the rows it deletes, not every finished task (with
40,000 finished tasks the planner's own choice, the status index and a sort,
took 12 ms a batch under the one write lock, whatever the batch's size)."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tenure.store import NewTask
from tenure.store.sqlite.backend import SQLiteStore
from tenure.store.sqlite.schema import Q

PARAMS = {
    "statuses": json.dumps(["done", "failed", "cancelled"]),
    "cutoff": 0.0,
    "limit": 500,
    "cap": 100_000,
}


@pytest.mark.parametrize("query", ["prune_tasks", "retention_backlog"])
def test_retention_walks_the_finished_tasks_index(tmp_path: Path, query: str) -> None:
    path = tmp_path / "tenure.db"
    store = SQLiteStore(path)
    old = datetime.now(UTC) - timedelta(hours=2)
    for task in store.task_create_many([NewTask(topic="t", name="n") for _ in range(200)], now=old):
        store.task_cancel(task.id, now=old)
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("ANALYZE")  # whatever the statistics say
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {Q[query]}", PARAMS)]
    tasks = [step for step in plan if "tenure_tasks " in f"{step} "]
    # Each read of the table is by the index of finished tasks, or by rowid
    # (the delete of the rows that walk found).
    assert any("tenure_tasks_finished" in step for step in tasks), plan
    assert all("tenure_tasks_finished" in s or "INTEGER PRIMARY KEY" in s for s in tasks), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan
