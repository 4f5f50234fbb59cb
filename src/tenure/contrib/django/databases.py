"""What tenure needs to know of a Django database: the store URL of the
database a connection alias uses, whether a store is that database, and the
driver connection under Django's own.

Only PostgreSQL through psycopg 3 and SQLite can hold tenure's tables: those are
the drivers tenure's stores speak, so a task written on Django's connection is
one tenure's workers read. Everything else is refused here with a
:class:`~tenure.errors.ConfigError` that says what would work instead. Nothing
in this module connects, except :func:`driver_connection`, which is asked to.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from tenure.errors import ConfigError
from tenure.store.url import parse_url, redact, sqlite_parts

SUPPORTED = ("postgresql", "sqlite")

ON_COMMIT = (
    "enqueue from transaction.on_commit(...) instead, or keep tenure's tables in a "
    "PostgreSQL or SQLite database of DATABASES"
)


def store_url(wrapper: Any) -> str:
    """The store URL of the database that Django's connection ``wrapper``
    (``django.db.connections[alias]``) uses now, without connecting."""
    vendor = wrapper.vendor
    if vendor == "postgresql":
        return _postgres_url(wrapper)
    if vendor == "sqlite":
        return _sqlite_url(wrapper)
    raise ConfigError(
        f"DATABASES[{wrapper.alias!r}] is {vendor}, and tenure keeps its tasks in PostgreSQL "
        f"or SQLite: set settings.TENURE['URL'] to a store of its own and {ON_COMMIT}"
    )


def _postgres_url(wrapper: Any) -> str:
    """libpq keywords for the database of ``wrapper``, from the parameters Django
    itself connects with (NAME, USER, HOST, PORT, OPTIONS such as sslmode or
    service), so that tenure reaches the same database the same way."""
    _need_psycopg3(wrapper.alias)
    from django.core.exceptions import ImproperlyConfigured  # noqa: PLC0415
    from psycopg.conninfo import make_conninfo  # noqa: PLC0415 - needed only for PostgreSQL

    try:
        params = wrapper.get_connection_params()
    except ImproperlyConfigured as exc:
        raise ConfigError(f"DATABASES[{wrapper.alias!r}]: {exc}") from None
    libpq = _libpq_keywords()
    # Django's own parameters (its cursor class, adapters, prepare threshold) and the
    # client encoding (tenure's connections choose theirs) stay Django's.
    kept = {
        key: str(value)
        for key, value in params.items()
        if key in libpq and key != "client_encoding" and value not in (None, "")
    }
    return make_conninfo("", **kept)


@cache
def _libpq_keywords() -> frozenset[str]:
    from psycopg import pq  # noqa: PLC0415 - needed only for PostgreSQL

    return frozenset(option.keyword.decode() for option in pq.Conninfo.get_defaults())


def _need_psycopg3(alias: str) -> None:
    try:
        from django.db.backends.postgresql.psycopg_any import is_psycopg3  # noqa: PLC0415
    except ImportError:  # neither driver: Django cannot connect either
        is_psycopg3 = False
    if not is_psycopg3:
        raise ConfigError(
            f"DATABASES[{alias!r}] is not reached through psycopg 3 (psycopg2 is not "
            "supported: tenure's PostgreSQL store speaks psycopg 3 only): "
            "pip install 'tenure[postgres]' (Django 4.2+ uses psycopg 3 when it is "
            "installed), or set settings.TENURE['URL'] to a store of its own and " + ON_COMMIT
        )


def _sqlite_url(wrapper: Any) -> str:
    name = wrapper.settings_dict["NAME"]
    if wrapper.is_in_memory_db():
        raise ConfigError(
            f"DATABASES[{wrapper.alias!r}] is an in-memory SQLite database, which tenure's "
            "workers and threads cannot share: use a file. Django's test runner makes "
            "one in memory unless DATABASES[...]['TEST']['NAME'] names a file, e.g. "
            "BASE_DIR / 'test.sqlite3'"
        )
    path = os.fspath(name)
    if path.startswith("file:"):
        raise ConfigError(
            f"DATABASES[{wrapper.alias!r}]['NAME'] is a SQLite URI ({path!r}); "
            "tenure needs the database file's path"
        )
    return f"sqlite:///{os.path.abspath(path)}"


def same_database(url: str, wrapper: Any) -> bool:
    """Whether the store at ``url`` is the database ``wrapper`` uses: the same
    file for SQLite; the same database name for PostgreSQL (the server is not
    compared: one reached through a pooler has another address). Raises for a
    database tenure cannot share (see :func:`store_url`)."""
    theirs = store_url(wrapper)
    if url == theirs:
        return True
    (dialect, mine), (their_dialect, theirs) = parse_url(url), parse_url(theirs)
    if dialect != their_dialect:
        return False
    if dialect == "sqlite":
        return _realpath(mine) == _realpath(theirs)
    from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415 - PostgreSQL only

    from tenure.store.postgres.params import store_params  # noqa: PLC0415 - PostgreSQL only

    wanted = conninfo_to_dict(store_params(mine).url).get("dbname")
    return wanted is None or wanted == conninfo_to_dict(theirs).get("dbname")


def holds_store(url: str | None, wrapper: Any) -> bool:
    """Whether tenure's store is the database of ``wrapper``, where Django's
    migrations make tenure's schema: always when ``settings.TENURE['URL']``
    (``url``) is unset; when set, if it names that database (never one tenure
    cannot share)."""
    if url is None:
        return True
    return wrapper.vendor in SUPPORTED and same_database(url, wrapper)


def _realpath(sqlite_url: str) -> str:
    return os.path.realpath(sqlite_parts(sqlite_url)[0])


def driver_connection(wrapper: Any) -> Any:
    """The driver connection under Django's connection ``wrapper``, connected
    (in Django's transaction if an atomic block is open, else in autocommit).
    Django's ``TransactionManagementError`` if that transaction is broken (an
    error inside the block, caught without a savepoint): Django refuses every
    query there, and a task written in it could only be rolled back."""
    if wrapper.vendor not in SUPPORTED:
        store_url(wrapper)  # raises, saying what to do instead
    if wrapper.vendor == "postgresql":
        _need_psycopg3(wrapper.alias)
    wrapper.ensure_connection()
    wrapper.validate_no_broken_transaction()
    return wrapper.connection


def mismatch(url: str, wrapper: Any, where: str) -> ConfigError:
    """The error for a task that Django's connection would write where tenure's
    workers never look."""
    return ConfigError(
        f"tenure's store is {redact(url)} ({where}), not the database of Django's "
        f"connection {wrapper.alias!r} ({wrapper.settings_dict['NAME']}): a task written "
        "in Django's transaction would never reach a worker; leave settings.TENURE['URL'] "
        f"unset to keep tasks in that database, or {ON_COMMIT}"
    )
