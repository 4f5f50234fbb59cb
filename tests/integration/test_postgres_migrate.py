"""Migrations on PostgreSQL: applied once each, even when several processes
open a new database at the same moment, and idempotent afterwards."""

from __future__ import annotations

import json
import multiprocessing
from multiprocessing.synchronize import Event
from pathlib import Path

import psycopg
import pytest

from tenure import App
from tenure.cli import main
from tenure.store import NewTask
from tenure.store.postgres import schema
from tenure.store.postgres.backend import PostgresStore
from tenure.store.sqlfile import migrations

PROCESSES = 6


def migrate_in_child(url: str, start: Event, out: str) -> None:
    """In a child process: wait for the others, migrate, record what it applied."""
    start.wait()
    Path(out).write_text(json.dumps(schema.migrate(url)))


def ledger(url: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT version, name FROM tenure.tenure_migrations ORDER BY version")
        return [(int(version), str(name)) for version, name in rows]


def every_version() -> list[int]:
    return [version for version, _, _ in migrations(schema.PACKAGE)]


@pytest.mark.slow
def test_processes_migrating_at_once_apply_each_migration_once(
    blank_postgres_url: str, tmp_path: Path
) -> None:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    outs = [tmp_path / f"applied-{i}.json" for i in range(PROCESSES)]
    procs = [
        ctx.Process(target=migrate_in_child, args=(blank_postgres_url, start, str(out)))
        for out in outs
    ]
    for proc in procs:
        proc.start()
    start.set()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0, f"a migrating process exited with {proc.exitcode}"
    applied = [version for out in outs for version in json.loads(out.read_text())]
    assert sorted(applied) == every_version()  # each version by exactly one process
    assert [version for version, _ in ledger(blank_postgres_url)] == every_version()


def test_migrating_again_applies_nothing(blank_postgres_url: str) -> None:
    assert schema.migrate(blank_postgres_url) == every_version()
    assert schema.migrate(blank_postgres_url) == []
    PostgresStore(blank_postgres_url).close()  # opening migrates too, and finds nothing to do
    expected = [(version, name) for version, name, _ in migrations(schema.PACKAGE)]
    assert ledger(blank_postgres_url) == expected
    assert expected[0] == (1, "initial")


def test_store_can_skip_migrating(blank_postgres_url: str) -> None:
    PostgresStore(blank_postgres_url, migrate=False).close()
    app = App(blank_postgres_url, migrate=False)
    _ = app.store
    app.close()
    with psycopg.connect(blank_postgres_url) as conn:
        row = conn.execute("SELECT to_regclass('tenure_migrations')").fetchone()
    assert row == (None,)


def test_tenure_migrate_applies_every_version(blank_postgres_url: str) -> None:
    assert main(["migrate", "--url", blank_postgres_url]) == 0
    assert [version for version, _ in ledger(blank_postgres_url)] == every_version()
    assert main(["migrate", "--url", blank_postgres_url]) == 0  # and again: nothing to do
    assert [version for version, _ in ledger(blank_postgres_url)] == every_version()


def test_statements_prepared_before_a_column_is_added_stay_valid(blank_postgres_url: str) -> None:
    """A running process keeps its prepared statements while a newer one migrates."""
    store = PostgresStore(blank_postgres_url, pool_min=1, pool_max=1)
    try:
        task = store.task_create(NewTask(topic="t", name="n"))
        for _ in range(10):  # past psycopg's threshold: the statements are prepared now
            store.task_get(task.id)
            store.task_list(limit=5)
        with psycopg.connect(blank_postgres_url, autocommit=True) as other:
            other.execute("ALTER TABLE tenure.tasks ADD COLUMN added_later text")
            other.execute("ALTER TABLE tenure.events ADD COLUMN added_later text")
        assert store.task_get(task.id) == task
        assert store.task_list(limit=5).tasks == [task]
        assert [e.task_id for e in store.event_list()] == [task.id]
    finally:
        store.close()
