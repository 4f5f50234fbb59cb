"""Applies the PostgreSQL store's numbered migrations, once each, in order, or
writes them out as one script for a DBA to run.

Each run is one transaction that first takes a transaction-scoped advisory
lock: processes that migrate the same database at once (every worker opening
the store at start-up, say) take turns, and the later ones find each migration
recorded in ``tenure_migrations`` and apply nothing. DDL is transactional in
PostgreSQL, so a migration that fails leaves no trace. The version numbers are
the SQLite store's: ``0001`` means the same schema in every dialect.

:func:`script` is the same run as text: the lock, the ledger, each migration
and its ledger row, in one transaction. A database migrated by hand with it
is one that stores opened afterwards find current.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

import psycopg

from tenure.store.postgres.driver import first_connection, translated
from tenure.store.postgres.pooler import split_listen
from tenure.store.sqlfile import load_queries, migrations

PACKAGE = "tenure.store.postgres"
Q = load_queries(PACKAGE)


def migrate(url: str, *, connect_timeout: float | None = None) -> list[int]:
    """Bring the database at ``url`` up to date; return the versions applied now.

    What ``tenure migrate`` runs. Safe to call from many processes at once. A
    server that refuses or cannot be reached is reported at once, as opening a
    store reports it (``connect_timeout``: see
    :func:`~tenure.store.postgres.driver.first_connection`).
    """
    url, _ = split_listen(url)
    with first_connection(url, "migrate", connect_timeout) as conn:
        return migrate_connection(conn)


def migrate_connection(conn: psycopg.Connection[Any]) -> list[int]:
    """Apply what is missing over ``conn`` (autocommit, no transaction open).

    The transaction is READ COMMITTED whatever the server's default: a
    migration that fills a table from another (0008's tallies) locks that
    table first, and each of its statements must then see every write
    committed before the lock, which a snapshot taken at the transaction's
    start (REPEATABLE READ, SERIALIZABLE) would not.
    """
    isolation = conn.isolation_level
    conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
    try:
        return _apply_missing(conn)
    finally:
        conn.isolation_level = isolation


def _apply_missing(conn: psycopg.Connection[Any]) -> list[int]:
    applied_now: list[int] = []
    with translated(), conn.transaction():
        conn.execute(Q["lock_migrations"])
        conn.execute(Q["create_migration_ledger"])
        done = {row[0] for row in conn.execute(Q["applied_migrations"])}
        for version, name, sql in migrations(PACKAGE):
            if version in done:
                continue
            # Without parameters the script goes over the simple query protocol,
            # which runs several statements (and $$-quoted function bodies) at once.
            conn.execute(sql)
            conn.execute(Q["record_migration"], {"version": version, "name": name})
            applied_now.append(version)
    return applied_now


def applied(url: str, *, connect_timeout: float | None = None) -> set[int]:
    """The versions the database at ``url`` has recorded, changing nothing;
    empty for a database tenure never migrated."""
    url, _ = split_listen(url)
    with first_connection(url, "migrate", connect_timeout) as conn, translated():
        try:
            return {row[0] for row in conn.execute(Q["applied_migrations"])}
        except psycopg.errors.UndefinedTable:
            return set()


def script(done: Collection[int] = ()) -> str:
    """The SQL that applies every migration not in ``done``, in order, as one
    transaction that also records each in ``tenure_migrations``; ``""`` when
    nothing is missing.

    For schemas a DBA runs by hand: ``psql -v ON_ERROR_STOP=1 -f`` (not
    ``-1``: the script has its own ``BEGIN`` and ``COMMIT``). Each migration's
    file is copied as it is, under a comment naming it.
    """
    missing = [m for m in migrations(PACKAGE) if m[0] not in done]
    if not missing:
        return ""
    names = ", ".join(f"{version:04d}_{name}" for version, name, _ in missing)
    parts = [
        f"-- tenure: PostgreSQL schema migrations {names}.\n"
        "-- One transaction: each migration is recorded in tenure_migrations, so\n"
        "-- stores opened afterwards find the schema current and change nothing.\n"
        "-- READ COMMITTED: see migrate_connection.\n"
        "BEGIN ISOLATION LEVEL READ COMMITTED;",
        Q["lock_migrations"],
        Q["create_migration_ledger"],
    ]
    for version, name, sql in missing:
        parts.append(f"-- {'-' * 74}\n-- {version:04d}_{name}.sql\n-- {'-' * 74}\n{sql.strip()}")
        parts.append(record_statement(version, name))
    parts.append("COMMIT;")
    return "\n\n".join(parts) + "\n"


def record_statement(version: int, name: str) -> str:
    """``record_migration`` with its values written in: a script has no
    parameters to bind. Both are known to be safe as literals: the version is
    an integer, the name a migration file's (``[a-z0-9_]+``)."""
    if not re.fullmatch(r"[a-z0-9_]+", name):  # pragma: no cover - sqlfile allows no other
        raise ValueError(f"unexpected migration name {name!r}")
    return Q["record_migration"] % {"version": int(version), "name": f"'{name}'"}
