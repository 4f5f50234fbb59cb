"""The connection pool, with reconnection attempts that stay frequent.

psycopg_pool replaces a dead connection in the background, waiting twice as
long after each refused attempt (1 s, 2 s, 4 s, ... up to its
``reconnect_timeout``, five minutes). After a one-minute outage its next attempt
could come a minute after the server is back, and every worker would wait that
long for a connection. Here the waits stop growing at :data:`RETRY_MAX`, so a
pool finds a returned server within seconds, as tenure's listeners and workers
do.
"""

from __future__ import annotations

from typing import Any

from psycopg_pool import ConnectionPool
from psycopg_pool.base import AttemptWithBackoff

RETRY_MAX = 2.0
"""Seconds between two attempts to reconnect, at most."""


class _Attempt(AttemptWithBackoff):
    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        self.delay = min(self.delay, RETRY_MAX)


class Pool(ConnectionPool[Any]):
    """A :class:`psycopg_pool.ConnectionPool` whose reconnection attempts come
    at least every :data:`RETRY_MAX` seconds while the server is away."""

    def _add_connection(self, attempt: AttemptWithBackoff | None, growing: bool = False) -> None:
        super()._add_connection(attempt or _Attempt(timeout=self.reconnect_timeout), growing)
