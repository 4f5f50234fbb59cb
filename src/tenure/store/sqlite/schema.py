"""Applies the SQLite store's numbered migrations, once each, in order.

The whole run holds the write lock (``BEGIN IMMEDIATE``), so processes that open
the same new database at once apply each migration exactly once: the later ones
wait, then find it recorded.
"""

from __future__ import annotations

import sqlite3
import time

from tenure.store.sqlfile import load_queries, migrations

Q = load_queries("tenure.store.sqlite")


def migrate(conn: sqlite3.Connection) -> list[int]:
    """Apply what is missing; return the versions applied now."""
    applied_now: list[int] = []
    conn.execute(Q["begin_write"])
    try:
        conn.execute(Q["create_migration_ledger"])
        done = {row[0] for row in conn.execute(Q["applied_migrations"])}
        for version, name, sql in migrations("tenure.store.sqlite"):
            if version in done:
                continue
            for statement in _statements(sql):
                conn.execute(statement)
            params = {"version": version, "name": name, "now": time.time()}
            conn.execute(Q["record_migration"], params)
            applied_now.append(version)
    except BaseException:
        conn.rollback()
        raise
    conn.commit()
    return applied_now


def _statements(sql: str) -> list[str]:
    """Split a script into complete statements (trigger bodies stay whole)."""
    statements: list[str] = []
    pending = ""
    for line in sql.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    if pending.strip() and not all(
        ln.strip().startswith("--") or not ln.strip() for ln in pending.splitlines()
    ):
        raise ValueError(f"incomplete SQL statement at end of migration: {pending[:80]!r}")
    return statements
