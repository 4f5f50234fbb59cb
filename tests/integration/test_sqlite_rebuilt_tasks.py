"""SQLite's migration 0010 makes the tasks table again (a new status needs a new
check): a file of version 9 keeps its tasks in their order, and the views and
triggers of an application that read tenure's tasks table keep working."""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path

from tenure import Status, open_store
from tenure.store import NewGate, NewTask
from tenure.store.sqlfile import migrations
from tenure.store.sqlite import schema

BEFORE = 9


def at_version_9(path: Path) -> None:
    """Tasks written by version 9's statements, and an application's own view
    of them and trigger reading them."""
    later = {version for version, _, _ in migrations("tenure.store.sqlite")} - set(
        range(1, BEFORE + 1)
    )
    now = time.time()
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.executescript(schema.script(done=later))
        for n in range(3):
            conn.execute(
                "INSERT INTO tenure_tasks (id, topic, name, status, data, created_at, updated_at)"
                " VALUES (?, 't', 'job', 'pending', '{}', ?, ?)",
                (f"old-{n}", now, now),
            )
        conn.execute("CREATE VIEW app_waiting_work AS SELECT id FROM tenure_tasks"
                     " WHERE status = 'pending'")  # fmt: skip
        conn.execute("CREATE TABLE app_orders (id INTEGER PRIMARY KEY, queued INTEGER)")
        conn.execute(
            "CREATE TRIGGER app_orders_count AFTER INSERT ON app_orders BEGIN"
            " UPDATE app_orders SET queued = (SELECT count(*) FROM tenure_tasks)"
            " WHERE id = NEW.id; END"
        )


def test_tasks_keep_their_order_and_the_applications_views_and_triggers_work(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    at_version_9(path)
    with open_store(f"sqlite:///{path}") as store:
        assert 10 in store.migrations_applied
        made = store.flow_create(
            [NewTask(topic="t", name="job"), NewTask(topic="t", name="job")],
            [NewGate("g", (0,), (1,))],
        )
        assert made[1].status is Status.WAITING
        listed = [t.id for t in store.task_list().tasks]
        assert listed == ["old-0", "old-1", "old-2", made[0].id, made[1].id]
    with closing(sqlite3.connect(path)) as conn:
        found = {row[0] for row in conn.execute("SELECT id FROM app_waiting_work")}
        assert found == {"old-0", "old-1", "old-2", made[0].id}
        conn.execute("INSERT INTO app_orders (id) VALUES (1)")
        assert conn.execute("SELECT queued FROM app_orders").fetchone() == (5,)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
