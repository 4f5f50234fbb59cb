"""SQLite's migration 0008, which gives every table, view, index and trigger of
tenure's a name beginning with ``tenure_``: a database of the version before
keeps every task, lease and event through it, and a file that an application
shares keeps the application's own ``tasks``, ``events`` and ``workers``
tables apart from tenure's."""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tenure import StoreError, open_store
from tenure.store import NewTask, ReserveParams
from tenure.store.sqlfile import load_queries, migrations
from tenure.store.sqlite import schema
from tenure.store.types import WorkerInfo
from tenure.task import Lease, Status

CATALOG = load_queries("tests", "schema/catalog.sql")
BEFORE = 7
"""The version before the names had their prefix."""

PREFIXED = 8

OLD_TASK = (
    "INSERT INTO tasks (id, topic, name, status, data, created_at, updated_at, unique_key,"
    " unique_lock, unique_on_conflict)"
    " VALUES (?, 'old', 'job', 'pending', '{\"args\": [], \"kwargs\": {}}', ?, ?, ?, ?, ?)"
)
"""A task as version 7's store wrote it (its trigger logs the creation)."""

RESERVED = (
    "UPDATE tasks SET status = 'running', attempts = attempts + 1, assignee = 'w1',"
    " lease_owner = 'w1', lease_token = record_ver + 1, lease_seconds = 3600,"
    " lease_expires_at = :now + 3600, started_at = :now, record_ver = record_ver + 1,"
    " updated_at = :now WHERE id = :id"
)
"""Version 7's reservation of one task (queries.sql's lease_picked)."""

COMPLETED = (
    "UPDATE tasks SET status = 'done', result = '\"kept\"', finished_at = :now,"
    " duration = 0, lease_owner = NULL, lease_expires_at = NULL,"
    " record_ver = record_ver + 1, updated_at = :now WHERE id = :id"
)


def url(path: Path) -> str:
    return f"sqlite:///{path}"


def at_version_7(path: Path) -> None:
    """A store file migrated up to :data:`BEFORE`, as its version left it:
    ``pending-0`` to ``pending-2`` pending, ``running`` leased to w1 and
    holding the unique lock ``k``, ``done`` done, a worker and a leader."""
    later = {version for version, _, _ in migrations("tenure.store.sqlite")} - set(
        range(1, BEFORE + 1)
    )
    now = time.time()
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.executescript(schema.script(done=later))
        for n in range(3):
            conn.execute(OLD_TASK, (f"pending-{n}", now, now, None, None, None))
        conn.execute(OLD_TASK, ("running", now, now, "k", "until_executed", "reject"))
        conn.execute(
            "INSERT INTO unique_locks (key, task_id, lock, expires_at, created_at)"
            " VALUES ('k', 'running', 'until_executed', ?, ?)",
            (now + 3600, now),
        )
        conn.execute(OLD_TASK, ("done", now, now, None, None, None))
        for query, task_id in ((RESERVED, "running"), (RESERVED, "done"), (COMPLETED, "done")):
            conn.execute(query, {"now": now, "id": task_id})
        conn.execute(
            "INSERT INTO workers (id, host, pid, pool, concurrency, started_at, last_seen)"
            " VALUES ('w1', 'here', 1, 'threads', 1, ?, ?)",
            (now, now),
        )
        conn.execute(
            "INSERT INTO leaders (name, owner, token, record_ver, lease_seconds, updated_at)"
            " VALUES ('scheduler', 's1', 1, 1, 30, ?)",
            (now,),
        )


def names(path: Path) -> list[str]:
    with closing(sqlite3.connect(path)) as conn:
        return [name for _, name, _ in conn.execute(CATALOG["sqlite_objects"])]


def ledger(path: Path) -> list[int]:
    with closing(sqlite3.connect(path)) as conn:
        return [row[0] for row in conn.execute("SELECT version FROM tenure_migrations ORDER BY 1")]


def test_a_database_of_version_7_keeps_every_task_lease_and_event(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    at_version_7(path)

    with open_store(url(path)) as store:
        assert ledger(path)[:PREFIXED] == list(range(1, PREFIXED + 1))  # and those after
        assert [n for n in names(path) if not n.startswith("tenure_")] == []
        history = [(e.id, e.task_id, e.to_status) for e in store.event_list()]
        assert history == [
            (1, "pending-0", "pending"), (2, "pending-1", "pending"),
            (3, "pending-2", "pending"), (4, "running", "pending"),
            (5, "done", "pending"), (6, "running", "running"),
            (7, "done", "running"), (8, "done", "done"),
        ]  # fmt: skip
        cursor = store.event_list()[-1].cursor
        running = store.task_get("running")
        assert running is not None and (running.record_ver, running.lease_token) == (2, 2)
        assert [lock.key for lock in store.unique_lock_list()] == ["k"]
        assert [w.id for w in store.worker_list()] == ["w1"]

        # The running task completes under the lease its reservation was given;
        # its unique lock goes with it, by the trigger under its new name.
        ended = store.task_complete(Lease("running", "w1", running.lease_token), "late")
        assert (ended.status, ended.result) == (Status.DONE, "late")
        assert store.unique_lock_list() == []

        # The pending ones are reserved once each, and nothing else is.
        taken = store.task_reserve(ReserveParams(owner="w2", limit=10))
        assert sorted(t.id for t in taken) == ["pending-0", "pending-1", "pending-2"]
        for task in taken:
            store.task_complete(Lease(task.id, "w2", task.lease_token))
        assert store.task_reserve(ReserveParams(owner="w2", limit=10)) == []

        done = store.task_get("done")
        assert done is not None and (done.status, done.result) == (Status.DONE, "kept")
        assert store.task_count() == 5

        # The log goes on from where it was, ids after the old ones.
        after = [(e.id, e.task_id, e.to_status) for e in store.event_list(after=cursor)]
        assert after[0] == (9, "running", "done")
        assert [e.to_status for e in store.task_events("running")] == [
            Status.PENDING, Status.RUNNING, Status.DONE,
        ]  # fmt: skip
        totals = store.task_transition_totals()["old"]
        assert (totals[Status.PENDING], totals[Status.RUNNING], totals[Status.DONE]) == (5, 5, 5)


def test_views_and_triggers_of_an_application_follow_the_renamed_tables(
    tmp_path: Path,
) -> None:
    """The renames run out of legacy mode, even on a connection that starts in
    it (as some builds of SQLite do): an application's view of tenure's tasks
    reads them under their new name."""
    path = tmp_path / "old.db"
    at_version_7(path)
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("CREATE VIEW waiting AS SELECT id FROM tasks WHERE status = 'pending'")
        conn.execute("PRAGMA legacy_alter_table = ON")
        assert schema.migrate(conn)[0] == PREFIXED  # and those after it
        assert conn.execute("SELECT id FROM waiting ORDER BY id").fetchall() == [
            ("pending-0",), ("pending-1",), ("pending-2",),
        ]  # fmt: skip


def test_a_stale_view_stops_the_migration_and_changes_nothing(tmp_path: Path) -> None:
    """A rename checks every view and trigger of the file; one that reads a
    table no longer there makes SQLite refuse it. The migration then changes
    nothing, and runs once the view is gone."""
    path = tmp_path / "old.db"
    at_version_7(path)
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("CREATE TABLE gone (x)")
        conn.execute("CREATE VIEW stale AS SELECT x FROM gone")
        conn.execute("DROP TABLE gone")

    with pytest.raises(StoreError, match="view stale"):
        open_store(url(path))
    assert ledger(path) == list(range(1, BEFORE + 1))
    assert "tasks" in names(path)

    with closing(sqlite3.connect(path)) as conn:
        conn.execute("DROP VIEW stale")
    with open_store(url(path)) as store:
        assert store.task_count() == 5


APPLICATIONS = {
    "tasks": "CREATE TABLE tasks (title TEXT NOT NULL, due TEXT)",
    "events": "CREATE TABLE events (kind TEXT, happened_at TEXT)",
    "workers": "CREATE TABLE workers (name TEXT PRIMARY KEY, salary INTEGER)",
}
"""An application's own tables, named as tenure's were, with their own columns."""


def applications(path: Path) -> dict[str, Any]:
    """Each of the application's tables: its definition and its rows."""
    with closing(sqlite3.connect(path)) as conn:
        return {
            table: (
                conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone(),
                conn.execute(f"SELECT * FROM {table}").fetchall(),
            )
            for table in APPLICATIONS
        }


def test_an_applications_tasks_events_and_workers_share_the_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with open_store(url(path)) as store:
        store.task_create(NewTask(topic="mail", name="send"))
    with closing(sqlite3.connect(path)) as conn, conn:
        for definition in APPLICATIONS.values():
            conn.execute(definition)
        conn.execute("INSERT INTO tasks VALUES ('buy milk', 'today')")
        conn.execute("INSERT INTO events VALUES ('signup', '2024-01-01')")
        conn.execute("INSERT INTO workers VALUES ('ada', 100)")
    before = applications(path)

    with open_store(url(path)) as store:
        created = store.task_create(NewTask(topic="mail", name="send", group_id="g"))
        store.worker_beat(WorkerInfo(id="w1", host="here", pid=1))
        taken = store.task_reserve(ReserveParams(owner="w1", limit=10))
        assert len(taken) == 2
        for task in taken:
            store.task_complete(Lease(task.id, "w1", task.lease_token), "sent")
        assert [t.status for t in store.task_list().tasks] == [Status.DONE, Status.DONE]
        assert [t.id for t in store.task_list_group("g")] == [created.id]
        assert [e.to_status for e in store.task_events(created.id)] == [
            Status.PENDING, Status.RUNNING, Status.DONE,
        ]  # fmt: skip
        assert len(store.event_list()) == 6
        assert [w.id for w in store.worker_list()] == ["w1"]
        assert store.task_prune(0, now=None) == 2
        assert store.worker_remove("w1")

    assert applications(path) == before
    assert before["tasks"][1] == [("buy milk", "today")]
