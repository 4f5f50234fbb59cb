"""Working through a connection pooler in transaction mode (PgBouncer, and the
like): finding out that one is in between, and the URL of a direct connection
for the listener.

In transaction mode a pooler lends a server session to a client for one
transaction at a time: whatever a statement leaves on the session (a prepared
statement, a setting, a lock, a ``LISTEN``) stays with the server session, and
the client's next transaction may run on another. What tenure's sessions hold,
and how each is kept right:

- **Prepared statements.** psycopg prepares a statement on its fifth run on a
  connection; the next transaction, on another server session, would find it
  missing (or find another client's under the same name). Behind a pooler the
  store's connections prepare nothing (``prepare_threshold=None``); directly,
  they prepare as before (each statement is parsed and planned once).
- **Session settings.** The session's time zone (UTC) is set with ``SET`` after
  connecting, not in the start-up packet's ``options``, which PgBouncer refuses
  (``unsupported startup parameter: options``). ``TimeZone``,
  ``client_encoding`` and ``application_name`` are among the settings PgBouncer
  follows for each client and sets again on whichever server session it lends.
  Every other setting tenure makes is transaction-local (``SET LOCAL``,
  ``set_config(…, true)``, ``SET TRANSACTION``, ``BEGIN ISOLATION LEVEL``):
  JIT compiling, which a direct session turns off for itself, is turned off
  behind a pooler by each reservation's transaction (``session.sql``).
- **Advisory locks** are transaction-level only (``pg_advisory_xact_lock``: the
  migrations' turn, the wake-up registrations), so they end with the
  transaction that took them. Nothing uses temporary tables, server-side
  cursors or ``WITH HOLD``.
- **LISTEN** needs a session of its own for as long as it listens: through a
  pooler in transaction mode its notifications would go to whichever client
  holds the server session next. ``NOTIFY`` (the triggers) is sent at commit
  and needs nothing. A store URL may name a direct connection for its
  listeners, ``?listen=postgresql://user@db-host:5432/dbname`` (percent-encoded
  if it has a query of its own; in a keyword string, ``listen='host=… port=…'``).
  Behind a pooler without one, the store does not listen: workers and followers
  look for news at their poll interval, and the store says so in one WARNING
  when it is first waited on.

A pooler is found without a setting: the key that PostgreSQL sends a client at
start-up to cancel its queries carries the server process's id, and a pooler
sends a key of its own instead (it must, to route a cancel request), so the id
in the key differs from ``pg_backend_pid()``. A pooler in session mode is found
too: its connections then prepare nothing either (a small cost, no harm), and
its URL may serve as ``listen=``, since a session there is a session.
"""

from __future__ import annotations

from typing import Any

import psycopg

from tenure.store.postgres.driver import SESSION, endpoint


def is_pooled(conn: psycopg.Connection[Any]) -> bool:
    """Whether ``conn`` reaches PostgreSQL through a pooler: the process id in
    the cancel key it was given at start-up is not its server process's."""
    row = conn.execute(SESSION["backend_pid"]).fetchone()
    return row is None or row[0] != conn.info.backend_pid


def polling_warning(url: str) -> str:
    """The WARNING of a store behind a pooler with no ``listen=`` URL."""
    where, db = endpoint(url)
    return (
        f'PostgreSQL at {where} (database "{db}") is reached through a connection pooler '
        "(PgBouncer?), where LISTEN is not heard: new tasks and events are looked for at "
        "each poll interval instead of waking their waiters; add listen=<a direct "
        "PostgreSQL URL> to the store URL to be woken at once"
    )
