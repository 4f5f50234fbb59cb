"""Applies the PostgreSQL store's numbered migrations, once each, in order, or
writes them out as one script for a DBA to run; and gives each schema its
queries.

tenure's objects live in a schema of their own (``tenure`` unless the store
URL's ``schema=`` or ``$TENURE_SCHEMA`` says otherwise: see
:mod:`~tenure.store.postgres.params`). The store's queries name it (spliced in
as ``{schema}`` when a schema's queries are loaded, :func:`queries`), so they
find tenure's tables from any session, an application's own connection with
its own search path included, and through a pooler that keeps no session
settings. A migration runs with its search path set to the schema for its
transaction only, so the migration files name nothing; an install made before
the schema existed, in ``public``, is moved into it first (see 0016).

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

import functools
import logging
import re
from collections.abc import Collection, Mapping
from typing import Any, NamedTuple

import psycopg

from tenure.store.postgres.driver import first_connection, translated
from tenure.store.postgres.params import DEFAULT_SCHEMA, check_schema, store_params
from tenure.store.sqlfile import load_queries, migrations

PACKAGE = "tenure.store.postgres"

log = logging.getLogger("tenure.store")


def queries(schema: str = DEFAULT_SCHEMA) -> Mapping[str, str]:
    """The store's named queries for tenure's objects in ``schema`` (a name
    :func:`~tenure.store.postgres.params.check_schema` accepts): ``{schema}``
    becomes the quoted identifier, ``{schema_name}`` the string literal. One
    mapping per schema, however it is named (``queries()`` is
    ``queries("tenure")``)."""
    return _queries(check_schema(schema))


@functools.cache
def _queries(schema: str) -> Mapping[str, str]:
    return load_queries(PACKAGE, splices={"schema": f'"{schema}"', "schema_name": f"'{schema}'"})


def migration_files(schema: str = DEFAULT_SCHEMA) -> list[tuple[int, str, str]]:
    """``(version, name, sql)`` of every migration, for tenure's objects in
    ``schema``: ``{schema}`` spliced in as in :func:`queries` (the functions
    name the tables they write)."""
    name = f'"{check_schema(schema)}"'
    return [(v, n, sql.replace("{schema}", name)) for v, n, sql in migrations(PACKAGE)]


def migrate(url: str, *, connect_timeout: float | None = None) -> list[int]:
    """Bring the database at ``url`` up to date; return the versions applied now.

    What ``tenure migrate`` runs. Safe to call from many processes at once. A
    server that refuses or cannot be reached is reported at once, as opening a
    store reports it (``connect_timeout``: see
    :func:`~tenure.store.postgres.driver.first_connection`).
    """
    url, _, schema = store_params(url)
    with first_connection(url, "migrate", connect_timeout) as conn:
        return migrate_connection(conn, schema)


def migrate_connection(conn: psycopg.Connection[Any], schema: str) -> list[int]:
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
        return _apply_missing(conn, schema)
    finally:
        conn.isolation_level = isolation


def _apply_missing(conn: psycopg.Connection[Any], schema: str) -> list[int]:
    q = queries(schema)
    applied_now: list[int] = []
    with translated(), conn.transaction():
        conn.execute(q["lock_migrations"])
        schema_exists, in_public = _found(conn, q)
        for statement in prologue(q, schema_exists, in_public):
            conn.execute(statement)
        done = {row[0] for row in conn.execute(q["applied_migrations"])}
        for version, name, sql in migration_files(schema):
            if version in done:
                continue
            # Without parameters the script goes over the simple query protocol,
            # which runs several statements (and $$-quoted function bodies) at once.
            conn.execute(sql)
            conn.execute(q["record_migration"], {"version": version, "name": name})
            applied_now.append(version)
    if in_public:
        log.warning(
            "tenure's tables moved from schema public into schema %s (a copy of the "
            "migration ledger stays in public to stop processes of older versions: "
            "DROP TABLE public.tenure_migrations once none runs)",
            schema,
        )
    return applied_now


def _found(conn: psycopg.Connection[Any], q: Mapping[str, str]) -> tuple[bool, bool]:
    """Whether the store's schema exists, and whether an install made before
    tenure had a schema of its own waits in ``public`` to be moved into it."""
    row = conn.execute(q["schema_state"]).fetchone()
    assert row is not None  # one row, always
    return bool(row[0]), bool(row[1])


def prologue(q: Mapping[str, str], schema_exists: bool, in_public: bool) -> list[str]:
    """What a migrating transaction runs after taking its turn and before the
    migrations: make the schema where it is missing, set the transaction's
    search path to it, move an install found in ``public`` into it, and make
    the ledger."""
    return [
        *([] if schema_exists else [q["create_schema"]]),
        q["migration_search_path"],
        *([q["move_from_public"]] if in_public else []),
        q["create_migration_ledger"],
    ]


class Found(NamedTuple):
    """What a database holds of tenure's, read without changing it."""

    done: set[int]
    """The versions recorded."""
    schema_exists: bool
    in_public: bool
    """Whether an install made before tenure had a schema of its own waits in
    ``public`` to be moved into it (its versions are ``done``)."""


def applied(url: str, *, connect_timeout: float | None = None) -> set[int]:
    """The versions the database at ``url`` has recorded, changing nothing;
    empty for a database tenure never migrated."""
    return found(url, connect_timeout=connect_timeout).done


def found(url: str, *, connect_timeout: float | None = None) -> Found:
    """What the database at ``url`` holds of tenure's, changing nothing."""
    url, _, schema = store_params(url)
    q = queries(schema)
    with first_connection(url, "migrate", connect_timeout) as conn, translated():
        schema_exists, in_public = _found(conn, q)
        ledger = q["applied_in_public"] if in_public else q["applied_migrations"]
        try:
            done = {row[0] for row in conn.execute(ledger)}
        except psycopg.errors.UndefinedTable:
            done = set()
    return Found(done, schema_exists, in_public)


def script(
    done: Collection[int] = (),
    schema: str = DEFAULT_SCHEMA,
    *,
    schema_exists: bool = False,
    in_public: bool = False,
) -> str:
    """The SQL that applies every migration not in ``done`` to tenure's objects
    in ``schema``, in order, as one transaction that also records each in the
    ledger (after making the schema, unless ``schema_exists``, and moving the
    install in ``public`` into it, if ``in_public``); ``""`` when nothing is
    missing and nothing is to be moved.

    For schemas a DBA runs by hand: ``psql -v ON_ERROR_STOP=1 -f`` (not
    ``-1``: the script has its own ``BEGIN`` and ``COMMIT``). Each migration's
    file is copied as it is, under a comment naming it.
    """
    missing = [m for m in migration_files(schema) if m[0] not in done]
    if not missing and not in_public:
        return ""
    q = queries(schema)
    names = ", ".join(f"{version:04d}_{name}" for version, name, _ in missing) or "none"
    moving = " (moved there from public first)" if in_public else ""
    parts = [
        f"-- tenure: PostgreSQL schema migrations {names}, in schema {schema}{moving}.\n"
        "-- One transaction: each migration is recorded in tenure_migrations, so\n"
        "-- stores opened afterwards find the schema current and change nothing.\n"
        "-- READ COMMITTED: see migrate_connection.\n"
        "BEGIN ISOLATION LEVEL READ COMMITTED;",
        q["lock_migrations"],
        *prologue(q, schema_exists, in_public),
    ]
    for version, name, sql in missing:
        parts.append(f"-- {'-' * 74}\n-- {version:04d}_{name}.sql\n-- {'-' * 74}\n{sql.strip()}")
        parts.append(record_statement(version, name, schema))
    parts.append("COMMIT;")
    return "\n\n".join(parts) + "\n"


def record_statement(version: int, name: str, schema: str = DEFAULT_SCHEMA) -> str:
    """``record_migration`` with its values written in: a script has no
    parameters to bind. Both are known to be safe as literals: the version is
    an integer, the name a migration file's (``[a-z0-9_]+``)."""
    if not re.fullmatch(r"[a-z0-9_]+", name):  # pragma: no cover - sqlfile allows no other
        raise ValueError(f"unexpected migration name {name!r}")
    return queries(schema)["record_migration"] % {"version": int(version), "name": f"'{name}'"}
