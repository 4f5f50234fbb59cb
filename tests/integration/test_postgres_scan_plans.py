"""Query plans of the dashboard's reads on PostgreSQL, with 200,000 tasks whose
statuses and groups are interleaved: a listing with a scan examines at most
``scan`` tasks, walked in order from an index (the one of the status asked
for, when one is), and sorts nothing but its page; the groups' read walks at
most ``scan`` tasks, then tasks_by_group. (The timings with a million tasks
are in the report of the change that made them; these plans are why.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tenure import Status
from tenure.store import NewTask, TaskFilter
from tenure.store.postgres import rows
from tenure.store.postgres.backend import PostgresStore
from tenure.store.sqlreads import filter_params
from tests.conformance.support import reach
from tests.conftest import _empty_postgres
from tests.integration.test_postgres_plan import explain, nodes

COPIES = 1999  # of 100 tasks: 200,000 in all
SCAN = 20_000
LIMIT = 50


@pytest.fixture(scope="module")
def interleaved(postgres_url: str) -> Iterator[PostgresStore]:
    """100 tasks in four statuses, a fifth of them in groups of two, copied
    1,999 times in order (each copy a group of its own), so every status and
    group is spread over the whole table: the case where walking the primary
    key and skipping rows is the slow way."""
    _empty_postgres(postgres_url, truncate=True)
    store = PostgresStore(postgres_url)
    for n in range(100):
        status = (Status.DONE, Status.FAILED, Status.PENDING, Status.CANCELLED)[n % 4]
        fields: dict[str, Any] = {"description": f"order {n}"}
        if n % 5 == 0:
            fields["group_id"] = f"g{n // 10}"
        if status is Status.PENDING:
            store.task_create(NewTask(topic=f"t{n % 3}", name="n", **fields))
        else:
            reach(store, status, **fields)
    with psycopg.connect(postgres_url) as conn:
        columns = [
            row[0]
            for row in conn.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = 'tenure' AND table_name = 'tasks'"
                " AND column_name NOT IN ('seq', 'id', 'group_id') ORDER BY ordinal_position"
            )
        ]
        listed = ", ".join(columns)
        # No events or wake-ups for the copies: their triggers are off for the
        # load only, inside its transaction.
        conn.execute("ALTER TABLE tenure.tasks DISABLE TRIGGER tasks_created")
        conn.execute("ALTER TABLE tenure.tasks DISABLE TRIGGER tasks_created_wake")
        conn.execute(
            f"INSERT INTO tenure.tasks (id, group_id, {listed})"
            f" SELECT id || '-' || copy, group_id || '-' || copy, {listed}"
            f" FROM tenure.tasks CROSS JOIN generate_series(1, {COPIES}) AS copy ORDER BY copy, seq"
        )
        conn.execute("ALTER TABLE tenure.tasks ENABLE TRIGGER tasks_created")
        conn.execute("ALTER TABLE tenure.tasks ENABLE TRIGGER tasks_created_wake")
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE tenure.tasks")
    yield store
    store.close()
    _empty_postgres(postgres_url, truncate=True)


def listing(**filters: Any) -> dict[str, Any]:
    params = filter_params(TaskFilter(), rows)  # every filter the statements take, unset
    return {**params, **filters, "after": 0, "before": 2**63 - 1, "limit": LIMIT, "scan": SCAN}


def task_scans(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [node for node in nodes(plan) if node.get("Relation Name") == "tasks"]


def sorted_rows(plan: dict[str, Any]) -> list[int]:
    return [int(node["Actual Rows"]) for node in nodes(plan) if node["Node Type"] == "Sort"]


@pytest.mark.slow
@pytest.mark.parametrize("query", ["list_tasks_newest_scan", "list_tasks_scan"])
def test_a_status_is_walked_in_its_own_index_and_nothing_is_sorted(
    interleaved: PostgresStore, postgres_url: str, query: str
) -> None:
    plan = explain(postgres_url, query, listing(status="pending", text="no such words"))
    assert plan["Actual Rows"] == 1  # an empty page, and where the next one starts
    scans = task_scans(plan)
    assert {node["Node Type"] for node in scans} <= {"Index Scan", "Index Only Scan"}
    walks = [node for node in scans if node["Actual Rows"] > LIMIT]  # not the page's
    assert walks and {node.get("Index Name") for node in walks} == {"tasks_by_status"}
    assert all(node["Actual Rows"] <= SCAN for node in scans)
    assert all(rows <= LIMIT for rows in sorted_rows(plan)), "sorted more than the page"


@pytest.mark.slow
def test_without_a_status_the_primary_key_is_walked_and_no_further_than_the_scan(
    interleaved: PostgresStore, postgres_url: str
) -> None:
    plan = explain(postgres_url, "list_tasks_newest_scan", listing(topic="no such topic"))
    scans = task_scans(plan)
    assert scans and {node.get("Index Name") for node in scans} == {"tasks_pkey"}
    assert all(node["Actual Rows"] <= SCAN for node in scans)
    assert all(rows <= LIMIT for rows in sorted_rows(plan))
    page = interleaved.task_list(TaskFilter(topic="no such topic"), newest_first=True, scan=SCAN)
    assert page.tasks == [] and page.cursor is not None


@pytest.mark.slow
def test_a_page_that_fills_stops_walking_at_once(
    interleaved: PostgresStore, postgres_url: str
) -> None:
    plan = explain(postgres_url, "list_tasks_newest_scan", listing(status="failed"))
    assert plan["Actual Rows"] == LIMIT
    assert all(node["Actual Rows"] <= LIMIT + 1 for node in task_scans(plan))


@pytest.mark.slow
def test_groups_walk_at_most_the_scan_then_each_group(
    interleaved: PostgresStore, postgres_url: str
) -> None:
    plan = explain(postgres_url, "task_groups", {"limit": 20, "scan": SCAN})
    assert all(node["Node Type"] != "Seq Scan" for node in nodes(plan)), plan
    counted = [n for n in task_scans(plan) if n.get("Index Name") == "tasks_by_group"]
    assert counted and all(node["Actual Rows"] <= SCAN for node in task_scans(plan))
    groups = interleaved.task_groups(limit=20, scan=SCAN)
    assert len(groups) == 20 and all(group.total == 2 for group in groups)
