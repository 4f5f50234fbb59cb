"""Each dialect's ``migrations/teardown.sql`` removes whatever the migrations
made, from a database at any version: applied after the first migration, the
first two, and so on up to all of them, it leaves the schema as empty as it
was, and from 0008_prefixed_names on it leaves an application's tables named as
tenure's were before alone. It is the reverse of ``manage.py migrate tenure zero``
(tenure.contrib.django.operations), and it names every object by hand, so a
migration that makes a new one fails here until the teardown drops it too.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tenure.store.sqlfile import load_queries, migrations, teardown
from tenure.store.sqlite.schema import PREFIXED, statements, teardown_statements

CATALOG = load_queries("tests", "schema/catalog.sql")
APPLICATIONS = ("events", "tasks", "workers")
"""Tables of an application's named as tenure's were before 0008_prefixed_names."""


def sqlite_objects(conn: sqlite3.Connection) -> list[str]:
    return [name for _, name, _ in conn.execute(CATALOG["sqlite_objects"])]


def test_the_sqlite_teardown_empties_a_database_at_every_version(tmp_path: Path) -> None:
    every = migrations("tenure.store.sqlite")
    for upto in range(1, len(every) + 1):
        conn = sqlite3.connect(tmp_path / f"at_{upto}.db", isolation_level=None)
        try:
            for _, _, sql in every[:upto]:
                for statement in statements(sql):
                    conn.execute(statement)
            tasks = "tenure_tasks" if upto >= PREFIXED else "tasks"
            assert tasks in sqlite_objects(conn)

            done = {version for version, _, _ in every[:upto]}
            for statement in teardown_statements(done):
                conn.execute(statement)

            assert sqlite_objects(conn) == [], f"left after {every[upto - 1][1]}"
        finally:
            conn.close()


def test_the_sqlite_teardown_leaves_an_applications_tables_of_the_old_names(
    tmp_path: Path,
) -> None:
    """From 0008 on, tasks, events and workers beside tenure's tables are an
    application's own: a teardown of a current database drops tenure's only."""
    conn = sqlite3.connect(tmp_path / "shared.db", isolation_level=None)
    try:
        for _, _, sql in migrations("tenure.store.sqlite"):
            for statement in statements(sql):
                conn.execute(statement)
        for table in APPLICATIONS:
            conn.execute(f"CREATE TABLE {table} (note TEXT)")
            conn.execute(f"INSERT INTO {table} VALUES ('mine')")
        done = {version for version, _, _ in migrations("tenure.store.sqlite")}

        for statement in teardown_statements(done):
            conn.execute(statement)

        assert sqlite_objects(conn) == sorted(APPLICATIONS)
        for table in APPLICATIONS:
            assert conn.execute(f"SELECT note FROM {table}").fetchall() == [("mine",)]
    finally:
        conn.close()


def test_the_postgres_teardown_empties_a_database_at_every_version(
    blank_postgres_url: str,
) -> None:
    psycopg = pytest.importorskip("psycopg")
    from tenure.store.postgres.schema import migration_files

    every = migration_files()
    with psycopg.connect(blank_postgres_url, autocommit=True) as conn:
        for upto in range(1, len(every) + 1):
            conn.execute("CREATE SCHEMA tenure")  # as the migrations' prologue does
            conn.execute("SET search_path TO tenure, pg_temp")
            for _, _, sql in every[:upto]:
                conn.execute(sql)
            assert ("relation", "tasks") in conn.execute(CATALOG["postgres_everything"]).fetchall()

            conn.execute(teardown("tenure.store.postgres"))

            left = conn.execute(CATALOG["postgres_everything"]).fetchall()
            assert left == [], f"left after {every[upto - 1][1]}"
            gone = conn.execute("SELECT to_regnamespace('tenure') IS NULL").fetchone()
            assert gone == (True,), f"schema tenure left after {every[upto - 1][1]}"
            conn.execute("RESET search_path")
