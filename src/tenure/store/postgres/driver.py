"""How tenure talks to psycopg: connection settings and the one place where
psycopg's errors become tenure's.

Every database call of the PostgreSQL store runs inside :func:`translated`, so
callers see only :class:`~tenure.errors.StoreUnavailable` (the server cannot be
reached now, the connection broke, the operation may be retried) or
:class:`~tenure.errors.StoreError` (anything else the server refused).

Opening a store starts with :func:`first_connection`: one direct attempt, so a
wrong port, database or password is reported at once in one line, instead of
by a pool retrying in the background until its timeout.
"""

from __future__ import annotations

import math
import os
import re
import select
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import conninfo, pq
from psycopg.types import json as json_types
from psycopg_pool import PoolClosed

from tenure import serializer
from tenure.errors import ConfigError, StoreError, StoreUnavailable
from tenure.store.postgres import arrays
from tenure.store.sqlfile import load_queries

CONNECT_TIMEOUT = 10
"""Seconds to wait for a new connection unless the URL says otherwise; libpq's
own default is to wait forever on a server that does not answer."""

SESSION = load_queries("tenure.store.postgres", "session.sql")
"""The queries of a session's set-up (``session.sql``), apart from the store's."""

OPEN_TIMEOUT = 5.0
"""Seconds opening a store waits for a server that does not answer, unless the
URL or the caller says otherwise. A refused connection fails at once."""


def connection_kwargs(url: str, role: str, *, pooled: bool = False) -> dict[str, Any]:
    """Keyword arguments for ``psycopg.connect(url, **kwargs)``.

    Connections run in autocommit: a single statement is its own transaction,
    and multi-statement work opens an explicit one. ``application_name`` names
    the role (``tenure-worker``, ``tenure-listener`` …) in ``pg_stat_activity``
    unless the URL names it already. The session's time zone is set after
    connecting (:func:`set_up`), not in the start-up packet's ``options``,
    which PgBouncer refuses: ``options`` is sent only when the URL or
    ``PGOPTIONS`` gives it.

    ``pooled``: the connection goes through a pooler in transaction mode
    (:mod:`.pooler`), where a statement prepared on one server session is
    missing on the next, so none is prepared.
    """
    try:
        given = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"invalid PostgreSQL URL: {_parse_error(exc, url)}") from None
    # psycopg prepares a statement after its fifth run on a connection, which
    # spares the server parsing and planning it on every later run. Every query
    # names its result columns, so a statement prepared before another
    # process's migration adds a column stays valid.
    # Behind a pooler in transaction mode the next transaction may run on
    # another server session, which lacks them (PgBouncer keeps them from
    # version 1.21, with max_prepared_statements set; Debian 12's is 1.18).
    kwargs: dict[str, Any] = {"autocommit": True}
    if pooled:
        kwargs["prepare_threshold"] = None
    # Text travels as UTF-8, whatever the database's encoding: psycopg then
    # reads and writes every str as it is (a SQL_ASCII session would give
    # bytes, a LATIN1 one could not carry most of the world's characters), and
    # the server converts to and from its own encoding, refusing a character
    # it cannot store with an error that says so.
    if "client_encoding" not in given:
        kwargs["client_encoding"] = "UTF8"
    if "application_name" not in given:
        kwargs["application_name"] = f"tenure-{role}"
    if "connect_timeout" not in given:
        kwargs["connect_timeout"] = CONNECT_TIMEOUT
    return kwargs


def configure(conn: psycopg.Connection[Any]) -> None:
    """Set up a new connection of the store's pool: JSON columns are decoded by
    tenure's own decoder (text, not bytes: the stdlib decoder is faster so), and
    a batch's arrays are sent as literals (:mod:`.arrays`); its time zone is
    UTC (:func:`set_up`)."""
    json_types.set_json_loads(serializer.loads, conn)
    arrays.register(conn)
    set_up(conn)


def configure_direct(conn: psycopg.Connection[Any]) -> None:
    """:func:`configure`, and no JIT compiling for the session (see
    ``session.sql``): for a connection that is not through a pooler."""
    configure(conn)
    conn.execute(SESSION["without_jit"])


def set_up(conn: psycopg.Connection[Any]) -> None:
    """Give a new session tenure's settings: its time zone, UTC, so times come
    back in UTC as they are stored, with no conversion per value (see
    ``session.sql``)."""
    conn.execute(SESSION["session_setup"])


def first_connection(url: str, role: str, timeout: float | None = None) -> psycopg.Connection[Any]:
    """A connection made now, or a tenure error that says in one line why not.

    Opening a store connects once, directly, before its pool exists: a pool
    would retry a refused connection in the background until its own timeout,
    logging every failure. This attempt waits ``timeout`` seconds at most for a
    server that does not answer (by default the URL's ``connect_timeout``, else
    :data:`OPEN_TIMEOUT`; libpq counts whole seconds, at least 2, for each
    address it tries).

    Raises :class:`~tenure.errors.ConfigError` when trying again cannot help (no
    such database or role, authentication refused, a setting libpq rejects)
    and :class:`~tenure.errors.StoreUnavailable` otherwise: a caller that waits
    for its server to come up retries only the latter.
    """
    kwargs = connection_kwargs(url, role)
    waits = conninfo.conninfo_to_dict(url).get("connect_timeout")
    if timeout is not None or waits is None:
        waits = max(2, math.ceil(OPEN_TIMEOUT if timeout is None else timeout))
        kwargs["connect_timeout"] = waits
    try:
        conn = psycopg.connect(url, **kwargs)
    except psycopg.OperationalError as exc:
        raise connect_error(exc, url, f"no answer within {waits} s") from None
    except psycopg.ProgrammingError as exc:  # a value psycopg refuses (connect_timeout=x)
        raise ConfigError(f"invalid PostgreSQL URL: {_parse_error(exc, url)}") from None
    try:
        with translated():
            set_up(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _parse_error(exc: Exception, url: str) -> str:
    """libpq's complaint about ``url``, unless it could quote part of a password."""
    if "password" in url.lower():
        return "it does not parse (its text is not shown: it holds a password)"
    return _first_line(exc)


# The server's reasons that trying again cannot cure, and how to say each one.
# (libpq reports a refused start-up as text only: no SQLSTATE comes with it.)
_REFUSALS = (
    (re.compile(r'database "(.*)" does not exist'), 'has no database "{0}"'),
    (re.compile(r'role "(.*)" does not exist'), 'has no role "{0}" (database "{db}")'),
    (
        re.compile(r'password authentication failed for user "(.*)"'),
        'refused the password of user "{0}" (database "{db}")',
    ),
    (
        re.compile(r"no password supplied"),
        'asks for a password and the URL gives none (database "{db}")',
    ),
    (
        re.compile(
            r"authentication failed|no pg_hba\.conf entry|permission denied for database"
            r"|not permitted to log in|not support SSL"
        ),
        'refused the connection (database "{db}"): {reason}',
    ),
)
_PREFIX = re.compile(
    r"^(?:connection (?:failed|is bad): )?(?:connection to server (?:at|on socket) .*? failed: )?"
)
_SETTING = re.compile(r"^invalid .*(?:value|number)")


def connect_error(
    exc: psycopg.OperationalError, url: str, timed_out: str = "no answer in time"
) -> StoreUnavailable | ConfigError:
    """The tenure error for a failed connection attempt: one line that names
    host, port and database (never the password), and why.

    ``timed_out`` is the reason given when the server did not answer in time.
    """
    reason = _PREFIX.sub("", _first_line(exc))
    fatal = reason.startswith("FATAL:")
    reason = reason.removeprefix("FATAL:").strip()
    reason = reason[:1].lower() + reason[1:]
    if _SETTING.match(reason):
        return ConfigError(f"invalid PostgreSQL URL: {reason}")
    where, db = endpoint(url, exc.pgconn)
    for pattern, says in _REFUSALS:
        found = pattern.search(reason)
        if found:
            refusal = says.format(*found.groups(), db=db, reason=reason)
            return ConfigError(f"PostgreSQL at {where} {refusal}")
    if isinstance(exc, psycopg.errors.ConnectionTimeout):
        reason = timed_out
    if fatal:  # the server answered, and turned the session away for now
        return StoreUnavailable(
            f'PostgreSQL at {where} (database "{db}") refused the connection: {reason}'
        )
    return StoreUnavailable(f'cannot reach PostgreSQL at {where} (database "{db}"): {reason}')


def endpoint(url: str, pgconn: pq.abc.PGconn | None = None) -> tuple[str, str]:
    """``host:port`` and the database name that a connection to ``url`` uses.

    Taken from a failed connection (``pgconn``) when there is one: it holds
    what libpq settled on, defaults and ``PG*`` variables included.
    """
    if pgconn is not None and pgconn.host:
        host, port, db = (v.decode(errors="replace") for v in (pgconn.host, pgconn.port, pgconn.db))
    else:
        given = conninfo.conninfo_to_dict(url)
        host = str(given.get("host") or os.environ.get("PGHOST") or "localhost")
        port = str(given.get("port") or os.environ.get("PGPORT") or "5432")
        user = given.get("user") or os.environ.get("PGUSER") or ""
        db = str(given.get("dbname") or os.environ.get("PGDATABASE") or user)
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    return f"{host}:{port}", db


@contextmanager
def translated() -> Iterator[None]:
    """Run a block of database calls; re-raise psycopg's errors as tenure's.

    ``OperationalError`` covers a lost or refused connection, a pool that gave
    no connection in time, a server shutting down, a cancelled statement, a
    deadlock or serialization failure: all worth trying again later. A closed
    pool is not: the store was closed, as SQLite's says, for good.
    """
    try:
        yield
    except PoolClosed:
        raise StoreError("the store is closed") from None
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


def is_gate_taken(exc: BaseException | None) -> bool:
    """Whether ``exc`` is the unique violation of a gate id that exists."""
    return (
        isinstance(exc, psycopg.errors.UniqueViolation) and exc.diag.constraint_name == "gates_pkey"
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
