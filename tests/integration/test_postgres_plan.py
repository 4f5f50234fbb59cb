"""Query plans on PostgreSQL: with a million finished tasks in the table,
reserving walks only the partial index of pending rows and holder writes find
their rows by id; neither reads the history."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tenure import Lease
from tenure.store import NewTask, ReserveParams
from tenure.store.postgres import rows
from tenure.store.postgres.backend import PostgresStore
from tenure.store.postgres.schema import queries
from tenure.store.sqlreads import filter_params
from tenure.store.types import TaskFilter
from tests.conftest import _empty_postgres

Q = queries()

DONE_ROWS = 1_000_000
PENDING_INDEXES = {"tasks_pending", "tasks_pending_by_topic"}


@pytest.fixture(scope="module")
def history(postgres_url: str) -> Iterator[PostgresStore]:
    """A store whose table holds a million done tasks and a few pending ones."""
    _empty_postgres(postgres_url, truncate=True)
    store = PostgresStore(postgres_url)
    with psycopg.connect(postgres_url) as conn:
        # The history needs no events: the creation trigger is off for the load
        # only, inside its transaction, so no failure can leave it off.
        conn.execute("ALTER TABLE tenure.tasks DISABLE TRIGGER tasks_created")
        conn.execute(
            "INSERT INTO tenure.tasks (id, topic, name, status, data, run_at, created_at,"
            " updated_at, finished_at)"
            " SELECT 'done-' || i, 't', 'n', 'done', 'null', now(), now(), now(), now()"
            " FROM generate_series(1, %s) AS i",
            [DONE_ROWS],
        )
        conn.execute("ALTER TABLE tenure.tasks ENABLE TRIGGER tasks_created")
        conn.commit()
        conn.autocommit = True
        conn.execute("ANALYZE tenure.tasks")
    store.task_create_many([NewTask(topic="t", name="n") for _ in range(20)])
    yield store
    store.close()
    _empty_postgres(postgres_url, truncate=True)  # leave no million rows to the next test


def explain(url: str, query: str, params: dict[str, Any]) -> dict[str, Any]:
    """The executed plan of a named query, in a transaction that is rolled back."""
    with psycopg.connect(url) as conn:
        row = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {Q[query]}", params).fetchone()
        conn.rollback()
    assert row is not None
    plan: dict[str, Any] = row[0][0]["Plan"]
    return plan


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def scans_of_tasks(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [node for node in nodes(plan) if node.get("Relation Name") == "tasks"]


def blocks(plan: dict[str, Any]) -> int:
    return int(plan.get("Shared Hit Blocks", 0)) + int(plan.get("Shared Read Blocks", 0))


@pytest.mark.slow
@pytest.mark.parametrize("ageing", [False, True], ids=["by-priority", "ageing"])
@pytest.mark.parametrize("query", ["reserve_any", "reserve_topic", "reserve_topics"])
def test_reserve_reads_only_pending_rows(
    history: PostgresStore, postgres_url: str, query: str, ageing: bool
) -> None:
    """A topic that ages is read a priority at a time, as few rows as one that
    does not."""
    history.topic_ageing("t", 60 if ageing else None)
    params = {"owner": "w", "limit": 10, "lease_seconds": 30.0, "tags": [], "now": None}
    plan = explain(postgres_url, query, {**params, "topic": "t", "topics": ["t"], "scope": ["t"]})
    history.topic_ageing("t", None)
    assert plan["Actual Rows"] == 10
    scans = scans_of_tasks(plan)
    # The paused topics', the limits' and ageing's tables, a few rows at most,
    # are read whole, once each at most.
    seq_scans = [node for node in nodes(plan) if node["Node Type"] == "Seq Scan"]
    small = {"paused_topics", "topic_limits", "topic_rates", "rate_starts", "task_counts",
             "topic_ageing"}  # fmt: skip
    assert all(node.get("Relation Name") in small for node in seq_scans), plan
    assert all(node.get("Actual Loops", 1) <= 1 for node in seq_scans), plan
    pending = [node for node in scans if node.get("Index Name") in PENDING_INDEXES]
    assert pending, f"no scan of a pending index in {plan}"
    assert all(node["Actual Rows"] <= 20 for node in pending)
    # A million done rows fill thousands of pages; the reserve touches a handful.
    assert blocks(plan) < 500, f"read {blocks(plan)} blocks"


@pytest.mark.slow
def test_holder_write_finds_its_rows_by_id(history: PostgresStore, postgres_url: str) -> None:
    running = history.task_reserve(ReserveParams(owner="w", limit=5))
    leases = [Lease(t.id, "w", t.lease_token or 0) for t in running]
    params = {
        "now": None,
        "ids": [lease.task_id for lease in leases],
        "tokens": [lease.token for lease in leases],
        "owners": [lease.owner for lease in leases],
        "lease_seconds": 30.0,
    }
    plan = explain(postgres_url, "extend_leases", params)
    assert plan["Actual Rows"] == 5
    assert all(node["Node Type"] != "Seq Scan" for node in nodes(plan)), plan
    assert blocks(plan) < 500, f"read {blocks(plan)} blocks"


@pytest.mark.slow
def test_a_meta_filter_reads_the_meta_index_not_the_history(
    history: PostgresStore, postgres_url: str
) -> None:
    history.task_create(NewTask(topic="t", name="n", meta={"customer": "c-42"}))
    history.task_create_many(
        [NewTask(topic="t", name="n", meta={"customer": "c-43"}) for _ in range(4)]
    )
    filters = filter_params(TaskFilter(meta=(("customer", "c-42"),)), rows)
    params = {**filters, "after": 0, "limit": 50}
    plan = explain(postgres_url, "list_tasks", params)
    assert plan["Actual Rows"] == 1
    assert any(node.get("Index Name") == "tasks_meta" for node in nodes(plan)), plan
    assert all(node["Node Type"] != "Seq Scan" for node in nodes(plan)), plan
    assert blocks(plan) < 500, f"read {blocks(plan)} blocks"
