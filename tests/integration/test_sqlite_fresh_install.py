"""A new SQLite file gets the schema its migrations end with, made at once
(tenure.store.sqlite.schema.built): tenure installs beside an application's
own ``tasks``, ``events`` and ``workers``, and its index and trigger named as
the first migrations named theirs, without touching them; and the schema made
at once is the one the migrations make one by one, catalog and rows, so the
two ways can never drift apart."""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tenure import open_store
from tenure.cli import main
from tenure.store import NewTask, ReserveParams
from tenure.store.sqlfile import migrations
from tenure.store.sqlite import schema
from tenure.store.types import WorkerInfo
from tenure.task import Lease, Status

VERSIONS = [version for version, _, _ in migrations("tenure.store.sqlite")]

APPLICATION = [
    "CREATE TABLE tasks (title TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'open')",
    "CREATE TABLE events (what TEXT NOT NULL)",
    "CREATE TABLE workers (name TEXT PRIMARY KEY, salary INTEGER)",
    "CREATE INDEX tasks_by_status ON tasks (status)",
    "CREATE TRIGGER tasks_created AFTER INSERT ON tasks"
    " BEGIN INSERT INTO events (what) VALUES ('created ' || NEW.title); END",
    "CREATE VIEW next_event_id AS SELECT count(*) + 1 AS id FROM events",
]
"""An application's own objects, named as tenure's first migrations named
theirs (tables, an index, a trigger, a view), with columns of its own."""

APPLICATION_NAMES = {"tasks", "events", "workers", "tasks_by_status", "tasks_created"}
APPLICATION_NAMES |= {"next_event_id", "sqlite_autoindex_workers_1"}


def an_applications_file(path: Path) -> None:
    with closing(sqlite3.connect(path)) as conn, conn:
        for statement in APPLICATION:
            conn.execute(statement)
        conn.execute("INSERT INTO tasks (title) VALUES ('buy milk')")
        conn.execute("INSERT INTO workers VALUES ('ada', 100)")


def applications(path: Path) -> dict[str, Any]:
    """The application's objects as sqlite_master holds them, and its rows."""
    with closing(sqlite3.connect(path)) as conn:
        found = [
            row
            for row in conn.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"
            )
            if row[1] in APPLICATION_NAMES
        ]
        rows = {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
            for table in ("tasks", "events", "workers")
        }
    return {"objects": found, "rows": rows}


def tenures_names(path: Path) -> list[str]:
    """Every name in the file that is not the application's."""
    with closing(sqlite3.connect(path)) as conn:
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master")]
    return [name for name in names if name not in APPLICATION_NAMES]


def works(url: str) -> None:
    """The store enqueues, reserves, completes, logs, lists and registers."""
    with open_store(url) as store:
        created = store.task_create(NewTask(topic="mail", name="send", group_id="g"))
        store.worker_beat(WorkerInfo(id="w1", host="here", pid=1))
        [taken] = store.task_reserve(ReserveParams(owner="w1", limit=10))
        assert taken.id == created.id
        store.task_complete(Lease(taken.id, "w1", taken.lease_token), "sent")
        assert [(t.id, t.status) for t in store.task_list().tasks] == [(created.id, Status.DONE)]
        assert [t.id for t in store.task_list_group("g")] == [created.id]
        assert [e.to_status for e in store.task_events(created.id)] == [
            Status.PENDING, Status.RUNNING, Status.DONE,
        ]  # fmt: skip
        assert [e.id for e in store.event_list()] == [1, 2, 3]
        assert store.task_transition_totals()["mail"][Status.DONE] == 1
        assert [w.id for w in store.worker_list()] == ["w1"]


def opened(path: Path) -> None:
    open_store(f"sqlite:///{path}").close()


def run_with_executescript(path: Path) -> None:
    script = schema.script()
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.executescript(script)


def run_with_the_sqlite3_shell(path: Path) -> None:
    shell = shutil.which("sqlite3")
    if shell is None:
        pytest.skip("no sqlite3 shell on this machine")
    subprocess.run([shell, "-bail", str(path)], input=schema.script(), text=True, check=True)


@pytest.mark.parametrize("install", [opened, run_with_executescript, run_with_the_sqlite3_shell])
def test_tenure_installs_beside_an_applications_tasks_events_and_workers(
    tmp_path: Path, install: Callable[[Path], None]
) -> None:
    path = tmp_path / "app.db"
    an_applications_file(path)
    before = applications(path)

    install(path)

    names = tenures_names(path)
    assert "tenure_tasks" in names and "tenure_tasks_created" in names
    assert [n for n in names if not n.startswith(("tenure_", "sqlite_autoindex_tenure_"))] == []
    assert schema.applied(str(path)) == set(VERSIONS)
    works(f"sqlite:///{path}")
    assert applications(path) == before

    # The application's trigger still writes to its own events, not tenure's.
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("INSERT INTO tasks (title) VALUES ('walk the dog')")
        assert conn.execute("SELECT what FROM events").fetchall() == [
            ("created buy milk",), ("created walk the dog",),
        ]  # fmt: skip
        assert conn.execute("SELECT count(*) FROM tenure_events").fetchone() == (3,)


def test_the_sql_for_a_new_file_beside_an_application_is_tenures_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tenure migrate --sql`` prints, for a new file, the schema made at
    once: a DBA's script makes no object under an old name either."""
    path = tmp_path / "app.db"
    an_applications_file(path)
    before = applications(path)
    assert main(["migrate", "--sql", "--url", f"sqlite:///{path}"]) == 0
    script = capsys.readouterr().out
    creates = r"^CREATE (?:TABLE|INDEX|VIEW|TRIGGER) (?:IF NOT EXISTS )?\"?(\w+)"
    made = re.findall(creates, script, re.MULTILINE)
    assert made and all(name.startswith("tenure_") for name in made), made

    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.executescript(script)
    assert main(["migrate", "--url", f"sqlite:///{path}"]) == 0
    assert capsys.readouterr().out.strip().endswith("is up to date")
    works(f"sqlite:///{path}")
    assert applications(path) == before


# -- made at once, or one by one -------------------------------------------------------


def catalog(path: Path) -> list[tuple[str, str, str, str | None]]:
    """Each object of the file: its kind, name, table and SQL, with runs of
    white space made one. SQLite's own sqlite_sequence is left out: the first
    migration's AUTOINCREMENT made it, and SQLite never drops it, but nothing
    of the schema now uses it, so a file built at once never has it."""
    with closing(sqlite3.connect(path)) as conn:
        found = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master"
            " WHERE name <> 'sqlite_sequence' ORDER BY type, name"
        ).fetchall()
    return [(kind, name, table, sql and " ".join(sql.split())) for kind, name, table, sql in found]


def contents(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows: the migrations' seeds (the ledger without the time
    each was applied at). sqlite_sequence counts as empty where it is absent."""
    with closing(sqlite3.connect(path)) as conn:
        tables = [
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        found = {
            table: sorted(conn.execute(f'SELECT * FROM "{table}"').fetchall()) for table in tables
        }
    found["tenure_migrations"] = [row[:2] for row in found["tenure_migrations"]]
    found.setdefault("sqlite_sequence", [])
    return found


def one_by_one(path: Path) -> None:
    """The first migration as its own script, the others by the store's
    runner, one at a time, as an install of each version was upgraded."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.executescript(schema.script(done=set(VERSIONS) - {VERSIONS[0]}))
        assert schema.migrate(conn) == VERSIONS[1:]


def at_once(path: Path) -> None:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        assert schema.migrate(conn) == VERSIONS


def test_the_schema_made_at_once_is_the_one_made_one_migration_at_a_time(
    tmp_path: Path,
) -> None:
    """What keeps a new migration honest: if the two ways differ (a seed the
    copy misses, an object made out of order), this says where."""
    stepped, built, scripted = tmp_path / "stepped.db", tmp_path / "built.db", tmp_path / "s.db"
    one_by_one(stepped)
    at_once(built)
    run_with_executescript(scripted)

    assert catalog(built) == catalog(stepped)
    assert catalog(scripted) == catalog(stepped)
    assert contents(built) == contents(stepped)
    assert contents(scripted) == contents(stepped)
    assert contents(stepped)["tenure_event_log"] == [(1, 0)]  # a seed, copied
    with closing(sqlite3.connect(built)) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert "sqlite_sequence" not in names
    for path in (stepped, built, scripted):
        works(f"sqlite:///{path}")


def test_a_file_with_migrations_recorded_is_migrated_one_by_one(tmp_path: Path) -> None:
    """An existing install keeps its rows through each migration it lacks:
    the schema made at once is only for a file that recorded none."""
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.executescript(schema.script(done=set(VERSIONS[3:])))  # 0001 to 0003
        conn.execute(
            "INSERT INTO tasks (id, topic, name, status, data, created_at, updated_at)"
            " VALUES ('kept', 'old', 'job', 'pending', '{\"args\": [], \"kwargs\": {}}', 0, 0)"
        )
        assert schema.migrate(conn) == VERSIONS[3:]
    with open_store(f"sqlite:///{path}") as store:
        kept = store.task_get("kept")
        assert kept is not None and kept.status == Status.PENDING
        assert [e.task_id for e in store.event_list()] == ["kept"]
