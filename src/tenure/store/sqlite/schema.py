"""Applies the SQLite store's numbered migrations, once each, in order, or
writes them out as one script.

The whole run holds the write lock (``BEGIN IMMEDIATE``), so processes that open
the same new database at once apply each migration exactly once: the later ones
wait, then find it recorded. :func:`script` is the same run as text, for
``sqlite3 tenure.db < migrations.sql``.

A database that has recorded some migrations (an existing install) is brought
up to date by applying the missing ones one by one, as they are written: only
they know how to carry its rows through each change (0008 renames the tables of
an older install in place).

A new database, one without a recorded migration, is not migrated step by step
but given the schema the steps end with (:func:`built`): every migration is
applied to a private in-memory database, and what that holds is copied into the
file, recorded as every version. The early migrations make objects under names
tenure no longer uses (``tasks``, ``events``, ``workers``, an index
``tasks_by_status``, a trigger ``tasks_created``), that a file an application
already uses may hold as its own; made in the file, they would fail there, and
tenure could not be installed beside the application, the very case 0008 gave
tenure names of its own for. Built aside, no old name ever reaches the file.
The copy is taken from SQLite's catalog rather than written by hand, so it
cannot drift from the migrations, and the migrations stay the one place the
schema is written; tests/integration/test_sqlite_fresh_install.py checks that
both ways end with the same catalog and rows.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Collection, Iterator
from contextlib import closing
from functools import cache
from pathlib import Path

from tenure.errors import StoreError
from tenure.store.sqlfile import load_queries, migrations, teardown

PACKAGE = "tenure.store.sqlite"
Q = load_queries(PACKAGE)

PREFIXED = 8
"""The migration from which every name tenure gives begins with ``tenure_``
(0008_prefixed_names.sql): in a database that recorded it, a table without the
prefix is not tenure's."""

_DROP = re.compile(r"^DROP (?:TABLE|VIEW) IF EXISTS (\w+);$", re.MULTILINE)


def migrate(conn: sqlite3.Connection) -> list[int]:
    """Apply what is missing; return the versions applied now. A new database
    gets the :func:`built` schema, recorded as every version.

    A current schema is only read: no write lock is taken, so opening a store
    never waits for a write transaction, not even the caller's own one that a
    first enqueue with ``connection=`` is made in."""
    if _current(conn):
        return []
    applied_now: list[int] = []
    conn.execute(Q["begin_write"])
    try:
        conn.execute(Q["create_migration_ledger"])
        done = {row[0] for row in conn.execute(Q["applied_migrations"])}
        if not done:  # a new database: made at once, no old name reaches it
            for statement in built():
                conn.execute(statement)
        for version, name, sql in migrations(PACKAGE):
            if version in done:
                continue
            for statement in statements(sql) if done else ():  # else built() made it
                conn.execute(statement)
            params = {"version": version, "name": name, "now": time.time()}
            conn.execute(Q["record_migration"], params)
            applied_now.append(version)
    except BaseException:
        conn.rollback()
        raise
    conn.commit()
    return applied_now


def _current(conn: sqlite3.Connection) -> bool:
    """Whether every migration is recorded already (read without a write lock)."""
    try:
        done = {row[0] for row in conn.execute(Q["applied_migrations"])}
    except sqlite3.OperationalError as exc:
        if str(exc).startswith("no such table"):
            return False
        raise
    return {version for version, _, _ in migrations(PACKAGE)} <= done


def applied(path: str) -> set[int]:
    """The versions the database file at ``path`` has recorded, read without
    writing (a missing file is not created); empty for a file that does not
    exist yet or that tenure never migrated."""
    file = Path(path)
    if not file.exists():
        return set()
    try:
        conn = sqlite3.connect(f"{file.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"SQLite error: {exc}") from exc
    try:
        return {row[0] for row in conn.execute(Q["applied_migrations"])}
    except sqlite3.OperationalError as exc:
        if str(exc).startswith("no such table"):
            return set()
        raise StoreError(f"SQLite error: {exc}") from exc
    except sqlite3.Error as exc:
        raise StoreError(f"SQLite error: {exc}") from exc
    finally:
        conn.close()


_BUILT_HEADER = (
    f"-- {'-' * 74}\n"
    "-- A new database: the schema these migrations end with, made at once (no\n"
    "-- object under a name tenure no longer uses, which may be yours).\n"
    f"-- {'-' * 74}\n"
)


def script(done: Collection[int] = ()) -> str:
    """The SQL that applies every migration not in ``done``, in order, under
    one write lock, recording each in ``tenure_migrations``; ``""`` when
    nothing is missing. Each migration's file is copied as it is, under a
    comment naming it; for a new database (``done`` empty), the :func:`built`
    schema instead, as :func:`migrate` makes it there."""
    missing = [m for m in migrations(PACKAGE) if m[0] not in done]
    if not missing:
        return ""
    names = ", ".join(f"{version:04d}_{name}" for version, name, _ in missing)
    parts = [
        f"-- tenure: SQLite schema migrations {names}.\n"
        "-- One transaction: each migration is recorded in tenure_migrations, so\n"
        "-- stores opened afterwards find the schema current and change nothing.\n"
        + Q["begin_write"],
        Q["create_migration_ledger"],
    ]
    now = time.time()
    if not done:
        parts.append(_BUILT_HEADER + "\n\n".join(f"{sql};" for sql in built()))
    for version, name, sql in missing:
        if done:
            parts.append(_under_its_name(version, name, sql))
        parts.append(record_statement(version, name, now))
    parts.append("COMMIT;")
    return "\n\n".join(parts) + "\n"


def _under_its_name(version: int, name: str, sql: str) -> str:
    return f"-- {'-' * 74}\n-- {version:04d}_{name}.sql\n-- {'-' * 74}\n{sql.strip()}"


@cache
def built() -> tuple[str, ...]:
    """The statements that make in a new database the schema that every
    migration, applied in order, ends with, and the rows they leave (the one
    row of ``tenure_event_log``): each migration is applied to a private
    in-memory database, whose objects are then written out in the order they
    were made. The rows go in before the triggers are made, so that copying
    them fires none: they already hold what triggers wrote in the build."""
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
        for _, _, sql in migrations(PACKAGE):
            for statement in statements(sql):
                conn.execute(statement)
        objects = conn.execute(Q["built_objects"]).fetchall()
        made = [sql for kind, _, sql in objects if kind != "trigger"]
        tables = [table for kind, table, _ in objects if kind == "table"]
        rows = [row for table in tables for row in _inserts(conn, table)]
        triggers = [sql for kind, _, sql in objects if kind == "trigger"]
    return (*made, *rows, *triggers)


def _inserts(conn: sqlite3.Connection, table: str) -> Iterator[str]:
    """An ``INSERT`` of each row of ``table``, its values as literals: a script
    has no parameters to bind, and the same statements are what
    :func:`migrate` runs."""
    columns = [row[0] for row in conn.execute(Q["built_columns"], {"table": table})]
    names = ", ".join(_quoted(column) for column in columns)
    select = f"SELECT {names} FROM {_quoted(table)}"  # noqa: S608 - names from the catalog
    for row in conn.execute(select):
        values = ", ".join(conn.execute(Q["literal"], {"value": v}).fetchone()[0] for v in row)
        yield f"INSERT INTO {_quoted(table)} ({names}) VALUES ({values})"  # noqa: S608 - same


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def record_statement(version: int, name: str, now: float) -> str:
    """``record_migration`` with its values written in: a script has no
    parameters to bind. All are safe as literals: two numbers, and a migration
    file's name (``[a-z0-9_]+``)."""
    if not re.fullmatch(r"[a-z0-9_]+", name):  # pragma: no cover - sqlfile allows no other
        raise ValueError(f"unexpected migration name {name!r}")
    values = {"version": str(int(version)), "name": f"'{name}'", "now": repr(float(now))}
    return re.sub(r":([a-z_]+)", lambda found: values[found[1]], Q["record_migration"])


def statements(sql: str) -> list[str]:
    """Split a script into complete statements (trigger bodies stay whole)."""
    found: list[str] = []
    pending = ""
    for line in sql.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            found.append(pending.strip())
            pending = ""
    if pending.strip() and not all(
        ln.strip().startswith("--") or not ln.strip() for ln in pending.splitlines()
    ):
        raise ValueError(f"incomplete SQL statement at end of migration: {pending[:80]!r}")
    return found


def teardown_statements(done: Collection[int]) -> list[str]:
    """The statements of ``migrations/teardown.sql`` that drop tenure's objects
    from a database that recorded the versions ``done``. The names without
    ``tenure_`` are tenure's only where migrations before :data:`PREFIXED` are
    recorded and it is not; elsewhere (``done`` empty: nothing of tenure's, or
    the current schema) they are left alone, as they may be an application's
    own tables (its ``tasks``, say)."""
    found = statements(teardown(PACKAGE))
    if done and PREFIXED not in done:
        return found
    return [statement for statement in found if _dropped(statement).startswith("tenure_")]


def _dropped(statement: str) -> str:
    match = _DROP.search(statement)
    if match is None:  # pragma: no cover - teardown.sql holds nothing else
        raise ValueError(f"not a DROP ... IF EXISTS: {statement[:80]!r}")
    return match[1]
