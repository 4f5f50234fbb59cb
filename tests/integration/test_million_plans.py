"""Every read that people and the scheduler make as history grows walks an
index on PostgreSQL with a million tasks and their events: ids by prefix,
the filtered listings of the dashboard, the API and ``tenure tasks``, a task's
history, a group, the event log's pages, the queue's figures, retention's
count and batches, the recent run times ``tenure doctor`` reads. None reads
the tasks or the event log whole: no sequential scan of either, and no read
examines more rows of them than its bound (a whole index walked through a
filter would). The tallies the figures read instead are small tables."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from tenure.store.backend import AFTER_ALL
from tenure.store.postgres import rows
from tenure.store.postgres.schema import queries
from tenure.store.sqlreads import filter_params
from tenure.store.types import TaskFilter
from tests.integration.million import RARE_TOPIC
from tests.integration.test_postgres_plan import nodes

Q = queries()

pytestmark = pytest.mark.slow

HISTORY = {"tasks", "events"}


def filters(**given: Any) -> dict[str, Any]:
    """A listing's filter parameters, as the store makes them."""

    return filter_params(TaskFilter(**given), rows)


SCAN = 100_000
"""The scan bound the dashboard gives its filtered listings and groups."""


def reads(some_id: str) -> Iterator[tuple[str, str, dict[str, Any], int]]:
    """(what, query, parameters, the rows of tasks and events it may read) of
    each read checked. A read bounded by a scan may read the scan and what it
    finds; every other, little more than what it answers."""
    now = datetime.now(UTC)
    page = {"after": 0, "limit": 50, "scan": None}
    prefix = {"pattern": rows.prefix_pattern(some_id[:-1])}
    yield "a unique prefix", "find_task_ids", prefix, 10
    yield "a periodic task's last tick", "last_task_id", {"pattern": "tick:%"}, 10
    yield "the failed tasks", "list_tasks", {**page, **filters(status="failed")}, 1000
    newest = {**page, **filters(status="failed"), "before": AFTER_ALL}
    yield "the newest failed", "list_tasks_newest", newest, 1000
    topic = {**page, **filters(topic=RARE_TOPIC), "scan": SCAN}
    yield "a topic, a scan at most", "list_tasks_scan", topic, 2 * SCAN + 100
    yield "a group's tasks", "list_group", {"group_id": "batch-7"}, 1001
    yield "a task's history", "list_task_events", {"task_id": some_id}, 100
    yield "the event log's first page", "list_events", rows.event_params((0, 0), 100), 1000
    tail = {"before_xid": str(2**62), "before_id": 2**62, "limit": 100}
    yield "the event log's last page", "tail_events", tail, 1000
    yield "the running tasks", "list_leased", {"after": 0, "limit": 100}, 1000
    yield "the queue at a glance", "stats_oldest_pending", {"now": now}, 1000
    endings = {"since": now - timedelta(minutes=5)}
    yield "the endings of five minutes", "stats_endings", endings, 1000
    yield "the groups", "task_groups", {"limit": 50, "scan": SCAN}, 3 * SCAN
    backlog = {"older_than": 3600.0, "now": None}
    yield "retention's backlog", "retention_backlog", {**backlog, "cap": 100_000}, 200_000
    batch = {**backlog, "limit": 5000, "statuses": ["done", "failed", "cancelled"]}
    yield "a retention batch of tasks", "prune_tasks", batch, 10_000
    yield "a retention batch of events", "prune_events", {**backlog, "limit": 5000}, 10_000
    yield "recent run times, for tenure doctor", "task_run_times", {"sample": 10_000}, 10_100


@pytest.fixture(scope="module")
def some_id(million_url: str) -> str:
    with psycopg.connect(million_url) as conn:
        found = conn.execute("SELECT id FROM tenure.tasks ORDER BY seq DESC LIMIT 1").fetchone()
    assert found is not None
    return str(found[0])


def examined(plan: dict[str, Any]) -> int:
    """Rows of the tasks or the event log a plan's scans read, kept or not."""
    return sum(
        int(node["Actual Rows"] * node["Actual Loops"])
        + int(node.get("Rows Removed by Filter", 0))
        + int(node.get("Rows Removed by Index Recheck", 0))
        for node in nodes(plan)
        if node.get("Relation Name") in HISTORY and "Scan" in node["Node Type"]
    )


def test_no_read_scans_the_tasks_or_the_event_log_whole(million_url: str, some_id: str) -> None:
    scanned, over = {}, {}
    with psycopg.connect(million_url) as conn:
        for what, query, params, most in reads(some_id):
            sql = f"EXPLAIN (ANALYZE, FORMAT JSON) {Q[query]}"
            row = conn.execute(sql, params).fetchone()
            conn.rollback()  # a retention batch deletes nothing of the shared store
            assert row is not None
            plan = row[0][0]["Plan"]
            seq = [
                node["Relation Name"]
                for node in nodes(plan)
                if node["Node Type"] == "Seq Scan" and node.get("Relation Name") in HISTORY
            ]
            if seq:
                scanned[what] = seq
            if examined(plan) > most:
                over[what] = examined(plan)
    assert scanned == {}
    assert over == {}
