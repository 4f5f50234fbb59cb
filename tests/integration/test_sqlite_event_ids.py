"""SQLite's event ids after migration 0007, which gives them in the triggers
instead of through AUTOINCREMENT's sequence: no id is ever given twice, not
after retention pruned every event, not after the events holding the highest
ids were deleted before the migration; the events kept keep their ids."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tenure import EventsPruned, open_store
from tenure.store import NewTask
from tenure.store.sqlfile import migrations
from tenure.store.sqlite import schema

BEFORE = 7
"""The migration that gives ids without AUTOINCREMENT."""

VERSIONS = {version for version, _, _ in migrations("tenure.store.sqlite")}


def old_store(path: Path, tasks: int) -> None:
    """A store file at the schema before :data:`BEFORE`, holding ``tasks``
    pending tasks, each with its creation event (ids 1 to ``tasks``)."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.executescript(schema.script(done={v for v in VERSIONS if v >= BEFORE}))
        for n in range(tasks):
            conn.execute(
                "INSERT INTO tasks (id, topic, name, status, data, created_at, updated_at)"
                " VALUES (?, 'old', 'job', 'pending', '{}', 0, 0)",
                (f"task-{n}",),
            )


def event_ids(path: Path) -> list[int]:
    with closing(sqlite3.connect(path)) as conn:
        return [row[0] for row in conn.execute("SELECT id FROM tenure_events ORDER BY id")]


def test_the_events_kept_keep_their_ids_and_the_next_comes_after(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old_store(path, 3)
    with open_store(f"sqlite:///{path}") as store:
        kept = store.event_list()
        assert [e.task_id for e in kept] == ["task-0", "task-1", "task-2"]
        created = store.task_create(NewTask(topic="new", name="job"))
        assert store.event_list(after=kept[-1].cursor)[0].task_id == created.id
    assert event_ids(path) == [1, 2, 3, 4]


def test_ids_deleted_before_the_migration_are_not_given_again(tmp_path: Path) -> None:
    """The sequence's highest id goes to the pruned mark when its events are
    gone: cursors up to it read as pruned, and new events come after it."""
    path = tmp_path / "old.db"
    old_store(path, 3)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("DELETE FROM events WHERE id >= 2")
    with open_store(f"sqlite:///{path}") as store:
        (first,) = store.event_list()
        with pytest.raises(EventsPruned):
            store.event_list(after=first.cursor)
        created = store.task_create(NewTask(topic="new", name="job"))
        assert [e.task_id for e in store.event_list()] == ["task-0", created.id]
    assert event_ids(path) == [1, 4]


def test_views_of_the_users_on_events_survive_the_migration(tmp_path: Path) -> None:
    """A rename checks every view of the schema: the migration renames the old
    table away in legacy mode, so a view of the user's on events (and a stale
    one, whose table is gone) neither stops it nor is lost. (The renames
    of 0008_prefixed_names check them: see test_sqlite_prefixed_names.py.)"""
    path = tmp_path / "old.db"
    old_store(path, 2)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE VIEW recent AS SELECT task_id FROM events ORDER BY id DESC")
        conn.execute("CREATE TABLE gone (x)")
        conn.execute("CREATE VIEW stale AS SELECT x FROM gone")
        conn.execute("DROP TABLE gone")
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.executescript(schema.script(done=VERSIONS - {BEFORE}))  # BEFORE alone
        conn.execute(
            "INSERT INTO tasks (id, topic, name, status, data, created_at, updated_at)"
            " VALUES ('task-2', 'new', 'job', 'pending', '{}', 0, 0)"
        )
        assert [row[0] for row in conn.execute("SELECT task_id FROM recent")] == [
            "task-2", "task-1", "task-0",
        ]  # fmt: skip


def test_after_every_event_is_pruned_the_next_id_is_new(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    later = datetime.now(UTC) + timedelta(hours=1)
    with open_store(f"sqlite:///{path}") as store:
        for _ in range(3):
            store.task_create(NewTask(topic="t", name="job"))
        store.report_save("daily", later, owner="me", query={}, task_ids=[], total=0)
        assert store.event_prune(0, now=later + timedelta(hours=1)) == 4
        assert event_ids(path) == []
        store.task_create(NewTask(topic="t", name="job"))
    assert event_ids(path) == [5]
