"""The SQLite store's connections: one per thread, closed together.

sqlite3 connections are not to be shared between threads mid-operation, and
opening one per operation would cost more than most operations; so each thread
opens its own on first use and keeps it. ``close()`` waits for each to be out
of use before closing it, and a thread that uses the store afterwards gets
:class:`~tenure.errors.StoreError`, never a connection closed under its feet.
sqlite3's errors become tenure's here (:func:`translated`), in one place.

A write transaction begins here too (:func:`begin_write`), waiting for the one
write lock in steps of its own: SQLite's busy handler sleeps 1, 2, 5, 10, 15,
20 and 25 ms in turn, so a writer that finds the lock taken for 4 ms waits 8,
and under steady contention (producers, workers and retention at once) the
99th percentile of an enqueue or a reservation rose to 20-35 ms for locks held
a few milliseconds. Here the attempt is repeated after 0.5 ms, then twice as
long each time up to 4 ms, until the store's busy timeout.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tenure.errors import StoreError, StoreUnavailable

FIRST_PAUSE = 0.0005
"""Seconds before the second attempt to take the write lock."""
MAX_PAUSE = 0.004
"""Seconds between two attempts at most."""


class _Connection:
    """A thread's connection and the lock that ``close()`` takes before closing it.

    Weakly tracked: when its thread ends, the thread-local reference goes, and
    the connection is closed when this is collected instead of leaking (closed
    here, not left to sqlite3's own finaliser, which warns from Python 3.13 on).
    """

    __slots__ = ("__weakref__", "conn", "in_use")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.in_use = threading.RLock()

    def __del__(self) -> None:
        self.conn.close()  # a no-op if close() or _forget() closed it already


class Connections:
    """The connections of one store, one per thread, made by ``open``."""

    def __init__(self, open: Callable[[], sqlite3.Connection], name: str) -> None:
        self._open = open
        self._name = name
        self._local = threading.local()
        self._all: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._closed = False

    def __len__(self) -> int:
        """How many connections are open (one per thread that used the store
        and is still alive)."""
        return len(self._all)

    @contextmanager
    def use(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection, held so that :meth:`close` waits for the
        operation, with sqlite3's errors turned into tenure's."""
        with translated():
            held: _Connection | None = getattr(self._local, "conn", None)
            if held is None:
                held = _Connection(self._open())
                with self._lock:
                    self._all.add(held)
                self._local.conn = held
            with held.in_use:
                if self._closed:
                    raise StoreError(f"{self._name} is closed")
                try:
                    yield held.conn
                except sqlite3.OperationalError as exc:
                    if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_READONLY:
                        # Opened while the file could not be written: SQLite keeps
                        # such a connection read-only, so the next use opens anew.
                        self._forget(held)
                    raise

    def _forget(self, held: _Connection) -> None:
        """Close this thread's connection ``held``; its next use opens another."""
        self._local.conn = None
        with self._lock:
            self._all.discard(held)
        held.conn.close()

    def close(self) -> None:
        """Close every thread's connection, each once no operation is using it."""
        with self._lock:
            self._closed = True
            held = list(self._all)
            self._all = weakref.WeakSet()
        for connection in held:
            with connection.in_use:
                connection.conn.close()


def begin_write(conn: sqlite3.Connection, begin: str, timeout: float) -> None:
    """Run ``begin`` (``BEGIN IMMEDIATE``) on ``conn`` once the write lock is
    free, trying again within a few milliseconds for ``timeout`` seconds
    with SQLite's own busy handler off meanwhile (it is on for everything
    else: a read may meet a lock briefly, as the last connection closes)."""
    # A PRAGMA takes no bound parameter: the values are integers made here.
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        deadline = time.monotonic() + timeout
        pause = FIRST_PAUSE
        while True:
            try:
                conn.execute(begin)
                return
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(2 * pause, MAX_PAUSE)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {round(timeout * 1000)}")


def _busy(exc: sqlite3.OperationalError) -> bool:
    return exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


@contextmanager
def translated() -> Iterator[None]:
    """The one place where sqlite3's errors become tenure's."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise StoreUnavailable(f"SQLite database is busy: {exc}") from exc
        if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_FULL:
            # Nothing was written; once space returns the same write succeeds,
            # so a worker retries its endings instead of dropping them.
            raise StoreUnavailable(f"SQLite cannot write now: {exc}") from exc
        raise StoreError(f"SQLite error: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"SQLite error: {exc}") from exc
