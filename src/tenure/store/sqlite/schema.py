"""Applies the SQLite store's numbered migrations, once each, in order, or
writes them out as one script.

The whole run holds the write lock (``BEGIN IMMEDIATE``), so processes that open
the same new database at once apply each migration exactly once: the later ones
wait, then find it recorded. :func:`script` is the same run as text, for
``sqlite3 tenure.db < migrations.sql``.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Collection
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
    """Apply what is missing; return the versions applied now.

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
        for version, name, sql in migrations(PACKAGE):
            if version in done:
                continue
            for statement in statements(sql):
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


def script(done: Collection[int] = ()) -> str:
    """The SQL that applies every migration not in ``done``, in order, under
    one write lock, recording each in ``tenure_migrations``; ``""`` when
    nothing is missing. Each migration's file is copied as it is, under a
    comment naming it."""
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
    for version, name, sql in missing:
        parts.append(f"-- {'-' * 74}\n-- {version:04d}_{name}.sql\n-- {'-' * 74}\n{sql.strip()}")
        parts.append(record_statement(version, name, now))
    parts.append("COMMIT;")
    return "\n\n".join(parts) + "\n"


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
