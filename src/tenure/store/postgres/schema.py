"""Applies the PostgreSQL store's numbered migrations, once each, in order.

Each run is one transaction that first takes a transaction-scoped advisory
lock: processes that migrate the same database at once (every worker opening
the store at start-up, say) take turns, and the later ones find each migration
recorded in ``tenure_migrations`` and apply nothing. DDL is transactional in
PostgreSQL, so a migration that fails leaves no trace. The version numbers are
the SQLite store's: ``0001`` means the same schema in every dialect.
"""

from __future__ import annotations

from typing import Any

import psycopg

from tenure.store.postgres.driver import connection_kwargs, translated
from tenure.store.sqlfile import load_queries, migrations

PACKAGE = "tenure.store.postgres"
Q = load_queries(PACKAGE)


def migrate(url: str) -> list[int]:
    """Bring the database at ``url`` up to date; return the versions applied now.

    What ``tenure migrate`` runs. Safe to call from many processes at once.
    """
    with translated(), psycopg.connect(url, **connection_kwargs(url, "migrate")) as conn:
        return migrate_connection(conn)


def migrate_connection(conn: psycopg.Connection[Any]) -> list[int]:
    """Apply what is missing over ``conn`` (autocommit, no transaction open)."""
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
