"""tenure's schema through Django's migration framework, on SQLite and on
PostgreSQL, each command in a real Django process: ``migrate`` applies
tenure's SQL migrations as Django migrations (recorded in django_migrations and
in tenure's own ledger, so a store opened afterwards changes nothing);
``showmigrations`` lists them; ``sqlmigrate`` prints their SQL; a second
``migrate`` does nothing; ``migrate tenure zero`` drops tenure's tables, and a
partial reversal is refused before anything runs. A schema that the
``post_migrate`` hook of earlier versions made (tenure's tables, no Django
rows) is taken over without running its SQL again, and one an older version
made is brought up to date.
"""

from __future__ import annotations

import json
import pkgutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tenure import open_store
from tenure.contrib.django import migrations as django_migrations
from tenure.store import NewTask
from tenure.store.migrate import migrate_store, pending_migrations
from tenure.store.postgres import schema as postgres_schema
from tenure.store.sqlfile import load_queries, migrations
from tenure.store.sqlite import schema as sqlite_schema
from tenure.store.url import DIALECT_PACKAGES
from tests.integration.test_django import (
    database_url,
    django_script,
    own_database,
    postgres_database,
    sqlite_database,
)

pytestmark = pytest.mark.slow

APP = "tests.apps.basic:app"
CATALOG = load_queries("tests", "schema/catalog.sql")
NAMES = sorted(info.name for info in pkgutil.iter_modules(django_migrations.__path__))

RUN = """
import io, json
from django.core.management import call_command
from django.core.management.base import CommandError

said = []
for command in COMMANDS:
    out = io.StringIO()
    try:
        call_command(*command, stdout=out, no_color=True)
    except CommandError as exc:
        out.write(f"CommandError: {exc}")
    said.append(out.getvalue())
print(json.dumps(said))
"""


@dataclass
class Target:
    """A Django database (``DATABASES['default']``) and tenure's URL for it."""

    dialect: str
    database: dict[str, Any]
    url: str

    def run(self, *commands: list[str], **tenure: Any) -> list[str]:
        """What each of ``commands`` (``call_command``'s arguments) printed, or
        its ``CommandError``, all in one Django process."""
        settings = {"DATABASES": {"default": self.database}, "TENURE": {"APP": APP, **tenure}}
        done = django_script(settings, f"COMMANDS = {list(commands)!r}\n{RUN}")
        assert done.returncode == 0, done.stdout + done.stderr
        said: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
        return said

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        if self.dialect == "sqlite":
            conn = sqlite3.connect(self.database["NAME"])
            try:
                return conn.execute(sql).fetchall()
            finally:
                conn.close()
        # tenure's schema when it exists, else public (Django's own tables).
        with psycopg.connect(self.url, options="-c search_path=tenure,public") as pg:
            return pg.execute(sql).fetchall()

    def tenures_objects(self) -> set[str]:
        """What is in the database besides Django's own migration table."""
        if self.dialect == "sqlite":
            names = {row[1] for row in self.query(CATALOG["sqlite_objects"])}
        else:
            names = {row[1] for row in self.query(CATALOG["postgres_everything"])}
        return {name for name in names if not name.lstrip("_").startswith("django_migrations")}

    def djangos_rows(self) -> list[str]:
        rows = self.query("SELECT name FROM django_migrations WHERE app = 'tenure' ORDER BY id")
        return [name for (name,) in rows]

    def ledger(self) -> list[tuple[Any, ...]]:
        return self.query("SELECT version, name, applied_at FROM tenure_migrations ORDER BY 1")

    def sql_migrations(self) -> list[str]:
        every = migrations(DIALECT_PACKAGES["sqlite" if self.dialect == "sqlite" else "postgresql"])
        return [f"{version:04d}_{name}" for version, name, _ in every]


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    if request.param == "sqlite":
        path = tmp_path / "shop.sqlite3"
        yield Target("sqlite", sqlite_database(path), f"sqlite:///{path}")
        return
    request.getfixturevalue("postgres_url")  # skips, or fails, without a server
    with own_database("tenure_django_migrations") as dbname:
        yield Target("postgresql", postgres_database(dbname), database_url(dbname))


def test_migrate_applies_tenures_sql_migrations_as_djangos(target: Target) -> None:
    migrated, listed, printed, noop, again = target.run(
        ["migrate"],
        ["showmigrations", "tenure"],
        ["sqlmigrate", "tenure", "0001"],
        ["sqlmigrate", "tenure", "0004"],
        ["migrate"],
    )

    assert [f"Applying tenure.{name}... OK" in migrated for name in NAMES] == [True] * len(NAMES)
    assert target.djangos_rows() == NAMES
    assert [f"[X] {name}" in listed for name in NAMES] == [True] * len(NAMES)
    # tenure's ledger has every SQL migration of the dialect: a store opened now
    # neither applies one again nor finds the schema wanting.
    assert [f"{v:04d}_{n}" for v, n, _ in target.ledger()] == target.sql_migrations()
    assert pending_migrations(target.url) == []
    with open_store(target.url) as store:
        assert store.task_count() == 0
    assert "CREATE TABLE tasks" in printed
    assert "INSERT INTO tenure_migrations" in printed or (
        'INSERT INTO "tenure".tenure_migrations' in printed
    )
    if target.dialect == "postgresql":
        assert "pg_advisory_xact_lock" in printed
        assert "VALUES (4, 'statement_triggers')" in noop
    else:
        assert "(no-op)" in noop  # 0004 has no SQLite migration
    assert "No migrations to apply." in again


def test_migrate_tenure_zero_drops_tenures_schema(target: Target) -> None:
    target.run(["migrate"])
    with open_store(target.url) as store:
        store.task_create(NewTask(topic="t", name="n"))

    undone, listed, printed = target.run(
        ["migrate", "tenure", "zero"],
        ["showmigrations", "tenure"],
        ["sqlmigrate", "tenure", "0001", "--backwards"],
    )

    assert "Unapplying tenure.0001_initial... OK" in undone
    assert target.tenures_objects() == set()
    assert target.djangos_rows() == []
    assert [f"[ ] {name}" in listed for name in NAMES] == [True] * len(NAMES)
    assert "DROP TABLE IF EXISTS" in printed
    assert pending_migrations(target.url) == target.sql_migrations()

    target.run(["migrate"])

    assert pending_migrations(target.url) == []
    tasks = "tenure_tasks" if target.dialect == "sqlite" else "tasks"
    assert tasks in target.tenures_objects()


def test_migrate_tenure_zero_leaves_an_applications_tasks_table_on_sqlite(
    tmp_path: Path,
) -> None:
    """tenure's SQLite tables are tenure_*: a table of the project's own named
    tasks, beside them, is not tenure's to drop."""
    target = Target("sqlite", sqlite_database(tmp_path / "shop.sqlite3"), "")
    target.run(["migrate"])
    with closing(sqlite3.connect(target.database["NAME"])) as conn, conn:
        conn.execute("CREATE TABLE tasks (title TEXT)")
        conn.execute("INSERT INTO tasks VALUES ('mine')")

    (undone,) = target.run(["migrate", "tenure", "zero"])

    assert "Unapplying tenure.0001_initial... OK" in undone
    assert target.tenures_objects() == {"tasks"}
    assert target.query("SELECT title FROM tasks") == [("mine",)]


def test_a_partial_reversal_is_refused_before_anything_runs(target: Target) -> None:
    target.run(["migrate"])

    (refused,) = target.run(["migrate", "tenure", "0005"])

    assert "CommandError: tenure's migrations are undone all at once or not at all" in refused
    assert "'migrate tenure zero'" in refused
    assert target.djangos_rows() == NAMES
    assert pending_migrations(target.url) == []


def test_a_schema_the_old_post_migrate_hook_made_is_taken_over(target: Target) -> None:
    # What the post_migrate hook of earlier versions ran: tenure's own migrations,
    # with no row in django_migrations.
    migrate_store(target.url)
    with open_store(target.url) as store:
        kept = store.task_create(NewTask(topic="t", name="n"))
    before = target.ledger()

    migrated, listed = target.run(["migrate"], ["showmigrations", "tenure"])

    assert [f"Applying tenure.{name}... OK" in migrated for name in NAMES] == [True] * len(NAMES)
    assert [f"[X] {name}" in listed for name in NAMES] == [True] * len(NAMES)
    assert target.ledger() == before  # not one applied again
    with open_store(target.url) as store:
        assert store.task_get(kept.id) is not None


def test_a_schema_an_older_version_made_is_brought_up_to_date(target: Target) -> None:
    # The first three SQL migrations, recorded in the ledger, as an older tenure's
    # hook left them: the script of all the others "done" is the script of those.
    older = target.sql_migrations()[:3]
    later = {int(name[:4]) for name in target.sql_migrations()[3:]}
    if target.dialect == "sqlite":
        conn = sqlite3.connect(target.database["NAME"])
        conn.executescript(sqlite_schema.script(later))
        conn.close()
    else:
        with psycopg.connect(target.url, autocommit=True) as pg:
            pg.execute(postgres_schema.script(later))
    before = target.ledger()
    assert [f"{v:04d}_{n}" for v, n, _ in before] == older

    target.run(["migrate"])

    assert target.ledger()[:3] == before  # kept as they were
    assert pending_migrations(target.url) == []  # the others applied now
    assert target.djangos_rows() == NAMES
    with open_store(target.url) as store:
        assert store.task_create(NewTask(topic="t", name="n")).topic == "t"


def test_a_store_elsewhere_is_migrated_by_tenure_not_in_djangos_database(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "tasks.sqlite3"
    target = Target("sqlite", sqlite_database(tmp_path / "shop.sqlite3"), "")

    migrated, listed = target.run(
        ["migrate"], ["showmigrations", "tenure"], URL=f"sqlite:///{elsewhere}"
    )

    assert target.tenures_objects() == set()  # Django's database: its migrations only
    assert [f"[X] {name}" in listed for name in NAMES] == [True] * len(NAMES)
    assert "tenure: applied 0001_initial" in migrated
    assert pending_migrations(f"sqlite:///{elsewhere}") == []


def test_with_migrate_false_the_schema_is_printed_not_applied(tmp_path: Path) -> None:
    target = Target("sqlite", sqlite_database(tmp_path / "shop.sqlite3"), "")

    migrated, printed = target.run(
        ["migrate"], ["sqlmigrate", "tenure", "0001"], APP="tests.apps.unmigrated:app"
    )

    assert "Applying tenure.0001_initial... OK" in migrated
    assert target.tenures_objects() == set()  # the DBA's to apply
    assert "CREATE TABLE tasks" in printed  # what to hand over
