"""The connection pool: it lends the connection returned last, and its
reconnection attempts stay frequent.

psycopg_pool lends its connections in turn, the one idle longest first. A
process that enqueues one task at a time then writes on each of its
connections in rotation, and every call costs more than on the connection just
used, in time and in the client's processor time (the operating system's work
for a socket gone cold counts there too; the figures are in the benchmarks
page's levers in the code). Lending the one returned last keeps a
quiet process on one warm connection and lets the others idle; psycopg_pool
then closes those (its ``max_idle``) from the other end, the ones idle longest,
and one past its ``max_lifetime`` is lent first, to be replaced on its return.

psycopg_pool replaces a dead connection in the background, waiting twice as
long after each refused attempt (1 s, 2 s, 4 s, ... up to its
``reconnect_timeout``, five minutes). After a one-minute outage its next attempt
could come a minute after the server is back, and every worker would wait that
long for a connection. Here psycopg_pool gives up after :data:`RECONNECT_ROUND`
(its attempts one second apart), and the pool starts a new round after a pause
of :data:`RECONNECT` (a :class:`~tenure.Backoff`, at most two seconds), through
psycopg_pool's public ``reconnect_failed`` and ``check()``: attempts never come
more than :data:`RETRY_MAX` seconds apart, so a pool finds a returned server
within seconds, as tenure's listeners and workers do.

Its connections keep a cursor for a statement run very often (see
:meth:`PooledConnection.kept_cursor`).
"""

from __future__ import annotations

import threading
from time import monotonic
from typing import Any, TypeVar

import psycopg
from psycopg.rows import RowFactory
from psycopg_pool import ConnectionPool

from tenure.retry import Backoff

R = TypeVar("R")

RECONNECT_ROUND = 2.0
"""Seconds psycopg_pool keeps trying to replace a connection before it gives up
and the pool pauses: attempts at 0, 1 and 2 seconds."""
RECONNECT = Backoff(base=0.5, maximum=2.0, jitter=0.5)
"""The pause before the pool's next round of attempts (spread so that the
processes of a fleet come back at different moments)."""
RETRY_MAX = RECONNECT.maximum
"""Seconds between two attempts to reconnect, at most."""


class PooledConnection(psycopg.Connection[Any]):
    """A connection of the store's pool."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._kept_cursors: dict[Any, psycopg.Cursor[Any]] = {}

    def kept_cursor(self, row_factory: RowFactory[R]) -> psycopg.Cursor[R]:
        """This connection's cursor for ``row_factory``, made at its first use
        and kept for the next ones.

        A new cursor looks up psycopg's adapter for each type among its
        parameters and columns; a kept one has them already, which a one-task
        enqueue notices (the benchmarks page's levers in the code). A kept cursor
        holds its last statement's parameters and answer until its next one,
        so it serves only statements of one task (its data at most the store's
        ``max_payload_bytes``, 1 MiB by default), whose answer is one row."""
        cursor = self._kept_cursors.get(row_factory)
        if cursor is None or cursor.closed:
            cursor = self._kept_cursors[row_factory] = self.cursor(row_factory=row_factory)
        return cursor


class Pool(ConnectionPool[Any]):
    """A :class:`psycopg_pool.ConnectionPool` that lends the connection
    returned last, and whose reconnection attempts come at least every
    :data:`RETRY_MAX` seconds while the server is away."""

    def __init__(self, conninfo: str = "", **kwargs: Any) -> None:
        kwargs.setdefault("connection_class", PooledConnection)
        kwargs.setdefault("reconnect_timeout", RECONNECT_ROUND)
        kwargs.setdefault("reconnect_failed", Pool._reconnect_later)
        super().__init__(conninfo, **kwargs)
        self._pauses = RECONNECT.delays()
        self._next_round: threading.Timer | None = None
        self._rounds = threading.Lock()

    def _reconnect_later(self) -> None:
        """psycopg_pool gave up a round of attempts: begin another after a
        pause (``check()`` grows the pool back to its ``min_size``). Several
        connections giving up at once make one round."""
        with self._rounds:
            if self.closed or (self._next_round is not None and self._next_round.is_alive()):
                return
            self._next_round = threading.Timer(next(self._pauses), self._round)
            self._next_round.daemon = True
            self._next_round.start()

    def _round(self) -> None:
        with self._rounds:
            if not self.closed:
                self.check()

    def close(self, timeout: float = 5.0) -> None:
        with self._rounds:
            if self._next_round is not None:
                self._next_round.cancel()
        super().close(timeout)

    def _get_ready_connection(self, timeout: float | None) -> Any:
        # Called with the pool's lock held. psycopg_pool takes the connection
        # idle longest (its checks and counts stay as they are): lend the one
        # returned last in its place, which joins the idle end as it was. One
        # past its max_lifetime is lent all the same, since psycopg_pool
        # replaces a connection when it comes back expired, and an idle one
        # never would.
        conn = super()._get_ready_connection(timeout)
        if conn is not None and self._pool and conn._expire_at > monotonic():
            self._pool.appendleft(conn)
            conn = self._pool.pop()
        return conn
