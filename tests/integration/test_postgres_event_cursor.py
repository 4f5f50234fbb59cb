"""The event cursor on PostgreSQL never skips an event whose transaction commits
after a later one: two real transactions commit out of order under a live
follower, and a naive reader paging by id, run alongside, shows the skip is real.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tenure import Event, Store
from tenure.store import NewTask
from tenure.store.postgres.backend import PostgresStore
from tenure.store.postgres.schema import queries

Q = queries()

Connection = psycopg.Connection[tuple[Any, ...]]


@pytest.fixture
def store(postgres_store: Store) -> Store:
    return postgres_store


@pytest.fixture
def connections(postgres_url: str) -> Iterator[tuple[Connection, Connection]]:
    """Two application connections, each in psycopg's default transaction mode."""
    with psycopg.connect(postgres_url) as first, psycopg.connect(postgres_url) as second:
        yield first, second


class Follower:
    """Reads the log from its saved cursor, as a process tailing events does."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        self.cursor: str | None = None
        self.seen: list[Event] = []

    def poll(self) -> list[Event]:
        found = []
        while page := self.store.event_list(after=self.cursor, limit=1):
            found.extend(page)
            self.cursor = page[-1].cursor
        self.seen.extend(found)
        return found


class NaiveReader:
    """Pages by event id, as ``event_list`` did before the cursor."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.last_id = 0
        self.seen: list[str] = []

    def poll(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT id, task_id FROM tenure.events WHERE id > %s ORDER BY id", [self.last_id]
            ).fetchall()
        for event_id, task_id in rows:
            self.last_id = event_id
            self.seen.append(task_id)


def test_out_of_order_commits_are_seen_once_each(
    store: PostgresStore, connections: tuple[Connection, Connection], postgres_url: str
) -> None:
    first, second = connections
    follower, naive = Follower(store), NaiveReader(postgres_url)
    store.task_create(NewTask(topic="t", name="n", id="early"), connection=first)
    store.task_create(NewTask(topic="t", name="n", id="late"), connection=second)
    second.commit()  # the later event id commits first

    for _ in range(3):  # however often it asks while the first transaction is open
        assert follower.poll() == []
        naive.poll()
    assert naive.seen == ["late"]  # the naive reader has moved past the open event

    first.commit()
    follower.poll()
    naive.poll()
    assert [e.task_id for e in follower.seen] == ["early", "late"]
    assert follower.poll() == []
    assert naive.seen == ["late"]  # ...and "early" is lost to it forever
    early, late = follower.seen
    assert early.id < late.id  # the scenario really was out of id order


def test_a_rolled_back_transaction_holds_nothing_back(
    store: PostgresStore, connections: tuple[Connection, Connection]
) -> None:
    first, second = connections
    follower = Follower(store)
    store.task_create(NewTask(topic="t", name="n", id="doomed"), connection=first)
    store.task_create(NewTask(topic="t", name="n", id="kept"), connection=second)
    second.commit()
    assert follower.poll() == []
    first.rollback()
    assert [e.task_id for e in follower.poll()] == ["kept"]


def test_a_transaction_in_another_database_holds_nothing_back(
    store: PostgresStore, postgres_url: str
) -> None:
    """Only this database's transactions can write its events, so a neighbour's
    open transaction (here one holding an xid in the server's own database,
    writing nothing) must not delay the log."""
    elsewhere = postgres_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(elsewhere) as neighbour:
        neighbour.execute("SELECT pg_current_xact_id()")  # an xid older than the event's
        task = store.task_create(NewTask(topic="t", name="n"))
        assert [e.task_id for e in store.event_list()] == [task.id]
        neighbour.rollback()


def test_an_open_transaction_here_holds_later_events_back(
    store: PostgresStore, connections: tuple[Connection, Connection]
) -> None:
    """The converse, and the price of the guarantee: a transaction of this
    database that holds an xid may yet write an event, so later ones wait."""
    first, _ = connections
    first.execute("SELECT pg_current_xact_id()")
    store.task_create(NewTask(topic="t", name="n", id="waits"))
    assert store.event_list() == []
    first.rollback()
    assert [e.task_id for e in store.event_list()] == ["waits"]


def test_events_from_before_the_migration_come_first(store: PostgresStore) -> None:
    store.task_create(NewTask(topic="t", name="n", id="new"))
    with psycopg.connect(store.url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO tenure.events (task_id, topic, name, to_status, attempt, at, xid)"
            " VALUES ('old', 't', 'n', 'pending', 0, now(), '0')"
        )
    [old, new] = store.event_list()
    assert (old.task_id, new.task_id) == ("old", "new")
    assert old.cursor.startswith("0.") and old.id > new.id


def test_listing_walks_the_cursor_index(store: PostgresStore, postgres_url: str) -> None:
    for _ in range(20):
        store.task_create_many([NewTask(topic="t", name="n") for _ in range(1000)])
    middle = store.event_list(limit=10_000)[9_999].cursor
    xid, event_id = middle.split(".")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("ANALYZE tenure.events")
        row = conn.execute(
            f"EXPLAIN (ANALYZE, FORMAT JSON) {Q['list_events']}",
            {"after_xid": xid, "after_id": int(event_id), "limit": 100},
        ).fetchone()
    assert row is not None
    plan = row[0][0]["Plan"]
    scans = [node for node in walk(plan) if node.get("Relation Name") == "events"]
    # the page, and the look at the newest event (is anything held back?)
    assert {(s["Node Type"], s.get("Index Name")) for s in scans} <= {
        ("Index Scan", "events_pkey"),
        ("Index Only Scan", "events_pkey"),
    }
    # started at the cursor: nothing before it read; the newest found at once
    assert sorted(s["Actual Rows"] for s in scans) == [1, 100]


def walk(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from walk(child)
