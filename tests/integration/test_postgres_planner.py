"""Plans: batches keep their limit whatever plan the server picks, and where
autovacuum is off the scheduler keeps the planner's statistics fresh.

A reservation (or a retention batch) picks its rows with LIMIT and FOR UPDATE
SKIP LOCKED. Were that pick a subquery the planner may run once per row of an
outer scan (a nested-loop semi-join, chosen here by turning the other joins
off, and seen in the wild once the table's statistics changed), each run would
skip the rows the previous runs locked and one statement would take far more
than its limit. The store's statements pick once; these tests hold them to it
on a database whose every session prefers nested loops.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from tenure import Lease, Status
from tenure.store import Completion, NewTask, ReserveParams, TaskFilter
from tenure.store.postgres.backend import PostgresStore
from tests.conftest import POSTGRES_URL, _with_database

NESTED_LOOPS_ONLY = (
    "enable_hashagg",
    "enable_hashjoin",
    "enable_mergejoin",
    "enable_material",
    "enable_sort",
)


def own_database(settings: tuple[str, ...] = ()) -> Iterator[PostgresStore]:
    """A store on a database of its own (no other session touches it), whose
    sessions start with each of ``settings`` turned off."""
    dbname = f"tenure_planner_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{dbname}"')
        for setting in settings:
            admin.execute(f'ALTER DATABASE "{dbname}" SET {setting} = off')
    opened = PostgresStore(_with_database(POSTGRES_URL, dbname))
    try:
        yield opened
    finally:
        opened.close()
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


@pytest.fixture
def store(postgres_url: str) -> Iterator[PostgresStore]:
    yield from own_database(NESTED_LOOPS_ONLY)


@pytest.fixture
def quiet_store(postgres_url: str) -> Iterator[PostgresStore]:
    yield from own_database()


def analyze(store: PostgresStore) -> None:
    with psycopg.connect(store.url, autocommit=True) as conn:
        conn.execute("ANALYZE tenure.tasks")
        conn.execute("ANALYZE tenure.events")


@pytest.mark.parametrize("topics", [None, ["t"], ["t", "u"]])
def test_a_reservation_takes_no_more_than_its_limit(
    store: PostgresStore, topics: list[str] | None
) -> None:
    store.task_create_many([NewTask(topic="t", name="n") for _ in range(2000)])
    analyze(store)
    taken = store.task_reserve(ReserveParams(owner="w", topics=topics, limit=5))
    assert len(taken) == 5
    assert store.task_count(TaskFilter(status=Status.RUNNING)) == 5


def test_a_retention_batch_deletes_no_more_than_its_limit(store: PostgresStore) -> None:
    store.task_create_many([NewTask(topic="t", name="n") for _ in range(300)])
    running = store.task_reserve(ReserveParams(owner="w", limit=300))
    store.task_complete_many([Completion(Lease(t.id, "w", t.lease_token or 0)) for t in running])
    analyze(store)
    later = store.clock_now().replace(year=store.clock_now().year + 1)
    assert store.task_prune(60, limit=5, now=later) == 5
    assert store.task_count() == 295
    assert store.event_prune(60, limit=7, now=later) == 7


def test_statistics_are_refreshed_only_where_autovacuum_is_off(
    quiet_store: PostgresStore,
) -> None:
    store, url = quiet_store, quiet_store.url
    with psycopg.connect(url, autocommit=True) as conn:
        autovacuum = conn.execute("SHOW autovacuum").fetchone() == ("on",)
        with conn.transaction():
            store.task_create_many(
                [NewTask(topic="t", name="n") for _ in range(500)], connection=conn
            )
        conn.execute("SELECT pg_stat_force_next_flush()")  # counted once this session idles
    if autovacuum:  # autovacuum's to do
        assert store.statistics_refresh() == []
        return
    deadline = time.monotonic() + 30
    while not (analyzed := store.statistics_refresh()):
        assert time.monotonic() < deadline, "the 500 new rows were never counted as changes"
        time.sleep(0.05)
    assert analyzed == ["events", "tasks"]
    assert store.statistics_refresh() == []  # fresh now
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables"
            " WHERE schemaname = 'tenure' AND relname = 'tasks'"
        ).fetchone()
    assert row == (True,)
