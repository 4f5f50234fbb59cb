"""The Django migration operation that runs one of tenure's own SQL migrations,
so that Django's migration framework makes tenure's schema: ``manage.py migrate``
applies it and ``django_migrations`` records it, ``showmigrations tenure`` lists
it, ``sqlmigrate tenure 0001`` prints it, and ``migrate tenure zero`` removes it.

Each module of :mod:`tenure.contrib.django.migrations` holds one
:class:`RunTenureSQL` naming the SQL file it runs in each dialect
(``tenure/store/postgres/migrations/NNNN_*.sql``, ``tenure/store/sqlite/...``).
The SQLite store needed fewer migrations than PostgreSQL's, so a step may name a
file for one dialect only; on the other it changes nothing. A new SQL migration
takes a new Django migration (tests/unit/test_django_migrations.py fails until
it has one).

tenure's own ledger, ``tenure_migrations``, stays what its stores read: a step
runs its SQL only when the ledger lacks that version, and records it there in
the same transaction (on PostgreSQL under the lock tenure's own migrations
take). So a schema tenure made itself, whether a store opened before ``manage.py
migrate`` or a project from the days when a ``post_migrate`` hook applied it, is
taken over as it is: each step finds its version recorded, and Django only
records the step. A store opened afterwards finds every version recorded and
changes nothing.

tenure's SQL migrations have no reverse one by one. The reverse of the first
step drops whatever any of them made (``migrations/teardown.sql``) and the
reverse of each later step changes nothing, so ``migrate tenure zero`` removes
tenure's schema; a partial reversal (``migrate tenure 0005``) is refused before
anything runs (:func:`refuse_partial_reversal`), since it could only pretend.

Where tenure's tables are not in the migrated database (another alias, a
``TENURE['URL']`` of another database, a database router that says no), a step
changes nothing there. Nor does it with ``App(migrate=False)``, where the schema
is a DBA's to apply; ``sqlmigrate`` then still prints the SQL to hand over.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from django.db import router
from django.db.migrations.operations.base import Operation

from tenure.contrib.django.binding import bound
from tenure.contrib.django.databases import holds_store
from tenure.errors import ConfigError
from tenure.store.sqlfile import migrations, teardown
from tenure.store.url import DIALECT_PACKAGES, Dialect

FIRST = "0001_initial"
"""The Django migration whose reverse removes tenure's schema."""


class RunTenureSQL(Operation):  # type: ignore[misc] # Django ships no type hints
    """Run tenure's SQL migration ``postgresql`` or ``sqlite`` (``"NNNN_name"``,
    a file of that dialect's ``migrations`` folder), whichever is the migrated
    database's, unless tenure's ledger has it already."""

    reduces_to_sql = True
    reversible = True

    def __init__(self, *, postgresql: str | None = None, sqlite: str | None = None) -> None:
        self.postgresql = postgresql
        self.sqlite = sqlite

    def files(self) -> dict[Dialect, str]:
        """The SQL migration of each dialect this step runs, by dialect."""
        named: dict[Dialect, str | None] = {"postgresql": self.postgresql, "sqlite": self.sqlite}
        return {dialect: name for dialect, name in named.items() if name}

    def state_forwards(self, app_label: str, state: Any) -> None:
        """No models: Django's project state stays as it was."""

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        dialect = _dialect(schema_editor)
        name = self.files().get(dialect) if dialect else None
        if dialect and name and _holds_tenure(schema_editor, app_label):
            _forwards(schema_editor, dialect, name)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        dialect = _dialect(schema_editor)
        name = self.files().get(dialect) if dialect else None
        if dialect and name == FIRST and _holds_tenure(schema_editor, app_label):
            _teardown(schema_editor, dialect)

    def describe(self) -> str:
        named = ", ".join(f"{dialect} {name}.sql" for dialect, name in self.files().items())
        return f"tenure's SQL migration ({named}); backwards: " + (
            "drop tenure's schema" if FIRST in self.files().values() else "nothing"
        )


def _dialect(schema_editor: Any) -> Dialect | None:
    vendor = schema_editor.connection.vendor
    return "postgresql" if vendor == "postgresql" else "sqlite" if vendor == "sqlite" else None


def _holds_tenure(schema_editor: Any, app_label: str) -> bool:
    """Whether the database being migrated holds tenure's tables, and tenure's
    schema is Django's to change there (or only printed, by ``sqlmigrate``)."""
    connection = schema_editor.connection
    if not router.allow_migrate(connection.alias, app_label):
        return False
    binding = bound()
    settings = binding.settings
    if connection.alias != settings.database:
        return False
    if not holds_store(settings.url, connection):
        return False
    return bool(schema_editor.collect_sql or binding.app.migrate)


def _forwards(schema_editor: Any, dialect: Dialect, name: str) -> None:
    """Run ``name``'s SQL and record it in tenure's ledger, unless the ledger
    has it (always, for ``sqlmigrate``: it prints what a database lacking it runs)."""
    version, short = int(name[:4]), name[5:]
    schema = _schema(dialect)
    if dialect == "sqlite":
        record = schema.record_statement(version, short, time.time())
        schema_editor.execute(schema.Q["create_migration_ledger"], None)
        _run(schema_editor, dialect, schema.Q, (version, short), record)
        return
    with _postgres_migrating(schema_editor) as queries:
        record = schema.record_statement(version, short, _postgres_schema())
        _run(schema_editor, dialect, queries, (version, short), record)


def _run(
    schema_editor: Any,
    dialect: Dialect,
    queries: Mapping[str, str],
    name: tuple[int, str],
    record: str,
) -> None:
    version, short = name
    if not schema_editor.collect_sql and version in _recorded(schema_editor, queries):
        return
    for statement in _split(dialect, _sql(dialect, version, short)):
        schema_editor.execute(statement, None)
    schema_editor.execute(record, None)


@contextmanager
def _postgres_migrating(schema_editor: Any) -> Iterator[Mapping[str, str]]:
    """Within :func:`_postgres_prologue`; the search path it set for tenure's
    SQL is given back after, since Django goes on in the same transaction (it
    records the step in its own table, which it names unqualified)."""
    from tenure.store.postgres import schema  # noqa: PLC0415 - PostgreSQL only

    previous = None
    if not schema_editor.collect_sql:
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(schema.queries(_postgres_schema())["session_search_path"])
            previous = cursor.fetchone()[0]
    queries = _postgres_prologue(schema_editor)
    yield queries
    if previous is not None:
        schema_editor.execute(queries["restore_search_path"], {"path": previous})


def _postgres_prologue(schema_editor: Any) -> Mapping[str, str]:
    """Begin a PostgreSQL migration as tenure's own migrations begin it, in the
    transaction Django opened (at the isolation of its settings): take the
    migrations' turn, make the store's schema if missing, search it, move an
    install found in ``public`` into it, make the ledger. The schema's queries.

    For ``sqlmigrate`` (nothing is read) the printed SQL makes the schema
    and moves nothing."""
    from tenure.store.postgres import schema  # noqa: PLC0415 - PostgreSQL only

    queries = schema.queries(_postgres_schema())
    schema_editor.execute(queries["read_committed"], None)
    schema_editor.execute(queries["lock_migrations"], None)
    exists, in_public = False, False
    if not schema_editor.collect_sql:
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(queries["schema_state"])
            exists, in_public = (bool(found) for found in cursor.fetchone())
    for statement in schema.prologue(queries, exists, in_public):
        schema_editor.execute(statement, None)
    return queries


def _postgres_schema() -> str:
    """The schema of tenure's objects: the store URL's, else the default."""
    from tenure.store.postgres.params import store_params  # noqa: PLC0415 - PostgreSQL only

    return store_params(bound().settings.url or "").schema


def _teardown(schema_editor: Any, dialect: Dialect) -> None:
    """Drop whatever tenure's migrations made, its ledger included (on SQLite,
    by the names the recorded migrations gave: from 0008 on, a ``tasks`` table
    is the application's own; on PostgreSQL, in tenure's schema only)."""
    if dialect == "postgresql":
        with _postgres_migrating(schema_editor):
            for statement in _split(dialect, teardown(DIALECT_PACKAGES[dialect])):
                schema_editor.execute(statement, None)
        return
    schema = _schema(dialect)
    done: set[int] = set()  # sqlmigrate prints what a current database runs
    if not schema_editor.collect_sql:
        schema_editor.execute(schema.Q["create_migration_ledger"], None)
        done = _recorded(schema_editor, schema.Q)
    for statement in schema.teardown_statements(done):
        schema_editor.execute(statement, None)


def _schema(dialect: Dialect) -> ModuleType:
    """The migrating module of ``dialect``'s store, imported when needed: the
    PostgreSQL one imports psycopg, which a SQLite project may lack."""
    if dialect == "postgresql":
        from tenure.store.postgres import schema as postgres_schema  # noqa: PLC0415

        return postgres_schema
    from tenure.store.sqlite import schema as sqlite_schema  # noqa: PLC0415

    return sqlite_schema


def _recorded(schema_editor: Any, queries: Mapping[str, str]) -> set[int]:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(queries["applied_migrations"])
        return {row[0] for row in cursor.fetchall()}


def _sql(dialect: Dialect, version: int, short: str) -> str:
    every = migrations(DIALECT_PACKAGES[dialect])
    if dialect == "postgresql":
        every = _schema(dialect).migration_files(_postgres_schema())
    for found, name, sql in every:
        if (found, name) == (version, short):
            return sql
    raise ConfigError(f"tenure has no {dialect} migration {version:04d}_{short}.sql")


def _split(dialect: Dialect, sql: str) -> list[str]:
    """The statements to execute one by one: SQLite's driver runs one at a time;
    PostgreSQL runs a whole script sent without parameters."""
    if dialect == "sqlite":
        return list(_schema(dialect).statements(sql))
    return [sql]


def refuse_partial_reversal(sender: Any, plan: Any = None, **kwargs: Any) -> None:
    """``pre_migrate``: refuse a plan that unapplies some of tenure's Django
    migrations but not the first, before anything runs. Only the first one's
    reverse changes the schema (it drops it all); undoing the others alone would
    mark changes undone that are still there."""
    from django.core.management import CommandError  # noqa: PLC0415 - Django is set up here

    undone = {
        migration.name
        for migration, backwards in plan or ()
        if backwards and migration.app_label == sender.label
    }
    if undone and FIRST not in undone:
        raise CommandError(
            f"tenure's migrations are undone all at once or not at all: its SQL "
            f"migrations have no reverse one by one. 'migrate {sender.label} zero' drops "
            f"tenure's tables and the tasks in them; {', '.join(sorted(undone))} cannot "
            "be unapplied alone"
        )
