"""Brings a store's schema up to date, or writes out the SQL that would, for
``tenure migrate``: which migrations a store lacks, applying them and saying which
were applied, and the script a DBA runs instead where schemas are theirs to change.
"""

from __future__ import annotations

from tenure.errors import ConfigError
from tenure.store.sqlfile import migrations
from tenure.store.url import (
    DIALECT_PACKAGES,
    Dialect,
    need_psycopg,
    open_store,
    parse_url,
    resolve_url,
    sqlite_parts,
)


def migrate_store(url: str | None = None, **options: object) -> list[str]:
    """Bring the schema of the store at ``url`` up to date; return the names of
    the migrations applied now (``["0001_initial", …]``; empty when it was
    current). Safe to run from many processes at once.

    ``options``: ``connect_timeout`` for PostgreSQL (no pool is made: one
    connection migrates), :func:`open_store`'s for SQLite.
    """
    dialect, url = parse_url(resolve_url(url))
    if dialect == "postgresql":
        need_psycopg()
        from tenure.store.postgres import schema as postgres_schema  # noqa: PLC0415

        return _names(dialect, postgres_schema.migrate(url, **options))  # type: ignore[arg-type]
    store = open_store(url, **options)
    try:
        versions: list[int] = getattr(store, "migrations_applied", [])
    finally:
        store.close()
    return _names(dialect, versions)


def pending_migrations(url: str | None = None, **options: object) -> list[str]:
    """The names of the migrations the store at ``url`` lacks, in order,
    changing nothing (every one, for a database not created yet).

    ``options``: ``connect_timeout`` for PostgreSQL.
    """
    dialect, url = parse_url(resolve_url(url))
    return _names(dialect, _missing(dialect, url, options))


def migration_sql(url: str | None = None, *, pending: bool = True, **options: object) -> str:
    """The SQL that brings the store at ``url`` up to date, for a DBA to run
    (``tenure migrate --sql``): the migrations it lacks (every one with
    ``pending=False``, which connects to nothing), in order, each under a
    comment naming its file, in one transaction that also records them so
    that stores opened afterwards change nothing. ``""`` when none is missing.

    ``options``: ``connect_timeout`` for PostgreSQL.
    """
    dialect, url = parse_url(resolve_url(url))
    if dialect == "postgresql":
        return _postgres_sql(url, pending, options)
    every = [version for version, _, _ in migrations(DIALECT_PACKAGES[dialect])]
    missing = _missing(dialect, url, options) if pending else every
    from tenure.store.sqlite import schema as sqlite_schema  # noqa: PLC0415

    return sqlite_schema.script(set(every) - set(missing))


def _postgres_sql(url: str, pending: bool, options: dict[str, object]) -> str:
    """:func:`migration_sql` for PostgreSQL: in the store's schema, after the
    move of an install found in ``public``."""
    need_psycopg()
    from tenure.store.postgres import params  # noqa: PLC0415
    from tenure.store.postgres import schema as postgres_schema  # noqa: PLC0415

    schema = params.store_params(url).schema
    if not pending:
        return postgres_schema.script((), schema)
    found = postgres_schema.found(url, **options)  # type: ignore[arg-type]
    return postgres_schema.script(
        found.done, schema, schema_exists=found.schema_exists, in_public=found.in_public
    )


def _missing(dialect: Dialect, url: str, options: dict[str, object]) -> list[int]:
    """The versions the database at ``url`` lacks, in order."""
    if dialect == "sqlite":
        from tenure.store.sqlite import schema as sqlite_schema  # noqa: PLC0415

        if options:
            raise ConfigError(f"unknown option(s) for SQLite: {', '.join(sorted(options))}")
        done = sqlite_schema.applied(sqlite_parts(url)[0])
    else:
        need_psycopg()
        from tenure.store.postgres import schema as postgres_schema  # noqa: PLC0415

        done = postgres_schema.applied(url, **options)  # type: ignore[arg-type]
    return [v for v, _, _ in migrations(DIALECT_PACKAGES[dialect]) if v not in done]


def _names(dialect: Dialect, versions: list[int]) -> list[str]:
    """``NNNN_name`` of each of ``versions``, in order."""
    wanted = set(versions)
    found = migrations(DIALECT_PACKAGES[dialect])
    return [f"{version:04d}_{name}" for version, name, _ in found if version in wanted]
