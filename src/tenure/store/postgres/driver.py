"""How tenure talks to psycopg: connection settings and the one place where
psycopg's errors become tenure's.

Every database call of the PostgreSQL store runs inside :func:`translated`, so
callers see only :class:`~tenure.errors.StoreUnavailable` (the server cannot be
reached now, the connection broke, the operation may be retried) or
:class:`~tenure.errors.StoreError` (anything else the server refused).
"""

from __future__ import annotations

import os
import select
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import conninfo
from psycopg.types import json as json_types

from tenure import serializer
from tenure.errors import ConfigError, StoreError, StoreUnavailable

CONNECT_TIMEOUT = 10
"""Seconds to wait for a new connection unless the URL says otherwise; libpq's
own default is to wait forever on a server that does not answer."""


def connection_kwargs(url: str, role: str) -> dict[str, Any]:
    """Keyword arguments for ``psycopg.connect(url, **kwargs)``.

    Connections run in autocommit: a single statement is its own transaction,
    and multi-statement work opens an explicit one. ``application_name`` names
    the role (``tenure-worker``, ``tenure-listener`` …) in ``pg_stat_activity``
    unless the URL names it already. The session's time zone is UTC, so
    times come back in UTC as they are stored, with no conversion per value.
    """
    try:
        given = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"invalid PostgreSQL URL: {exc}") from None
    # psycopg prepares a statement after its fifth run on a connection, which
    # spares the server parsing and planning it on every later run. Every query
    # names its result columns, so a statement prepared before another
    # process's migration adds a column stays valid.
    # (PgBouncer in transaction mode keeps them from version 1.21, with
    # max_prepared_statements set.)
    kwargs: dict[str, Any] = {"autocommit": True}
    if "application_name" not in given:
        kwargs["application_name"] = f"tenure-{role}"
    if "connect_timeout" not in given:
        kwargs["connect_timeout"] = CONNECT_TIMEOUT
    # An explicit "options" replaces PGOPTIONS: keep what either gave.
    given_options = given.get("options") or os.environ.get("PGOPTIONS", "")
    kwargs["options"] = f"{given_options} -c TimeZone=UTC".strip()
    return kwargs


def configure(conn: psycopg.Connection[Any]) -> None:
    """Set up a new connection of the store's pool: JSON columns are decoded by
    tenure's own decoder (text, not bytes: the stdlib decoder is faster so)."""
    json_types.set_json_loads(serializer.loads, conn)


@contextmanager
def translated() -> Iterator[None]:
    """Run a block of database calls; re-raise psycopg's errors as tenure's.

    ``OperationalError`` covers a lost or refused connection, a pool that gave
    no connection in time, a server shutting down, a cancelled statement, a
    deadlock or serialization failure: all worth trying again later.
    """
    try:
        yield
    except psycopg.OperationalError as exc:
        raise StoreUnavailable(f"PostgreSQL unavailable: {_first_line(exc)}") from exc
    except psycopg.Error as exc:
        raise StoreError(f"PostgreSQL error: {_first_line(exc)}") from exc


def looks_dropped(conn: psycopg.Connection[Any]) -> bool:
    """Whether an idle pooled connection may have been dropped by the server,
    found without a round trip.

    Nothing is owed to an idle session (pool connections never LISTEN), so
    anything waiting to be read on its socket is the server's goodbye (the
    FATAL message of a termination or a shutdown) or the end of the stream.
    Only such a connection is worth a round trip to check. A peer that
    vanished without a word (a lost host) shows nothing; the operation on it
    then fails with ``StoreUnavailable`` and was not acknowledged.
    """
    if conn.closed or conn.broken:
        return True
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    return bool(poller.poll(0))


def is_duplicate_id(exc: BaseException) -> bool:
    """Whether ``exc`` is the unique violation of a task id that exists."""
    return (
        isinstance(exc, psycopg.errors.UniqueViolation)
        and exc.diag.constraint_name == "tasks_id_key"
    )


def lost_race(exc: BaseException) -> bool:
    """Whether ``exc`` refused a leadership upsert only because a concurrent one
    won: a unique violation of the leaders' key, or a serialization failure
    (under an isolation level stricter than read committed). Either way the
    statement changed nothing, and running it again finds the winner's row."""
    if isinstance(exc, psycopg.errors.UniqueViolation):
        return exc.diag.constraint_name == "leaders_pkey"
    return isinstance(exc, psycopg.errors.SerializationFailure)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
