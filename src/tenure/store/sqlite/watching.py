"""Wake-ups for SQLite, which sends no notifications: the change counter watched.

``PRAGMA data_version`` changes when another connection commits, and reading it
costs no I/O (it is kept in the WAL index, in shared memory), so a waiting worker
or follower looks at it every couple of milliseconds and reads the tables only
when it moved. A second after its last news (a runnable task, an event) it
looks every 10 ms instead: an idle worker then costs a fraction of the CPU
(its scheduler's and heartbeat's commits move the counter too, so "idle"
cannot mean "nothing committed"), and the first task after a quiet spell
waits 5 ms more on average, while work that keeps coming is still picked up
within milliseconds.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from tenure.clock import epoch_or_now
from tenure.store.sqlite.schema import Q
from tenure.store.validate import seconds as validate_seconds

WATCH_INTERVAL = 0.002
"""Seconds between two looks at the change counter."""
QUIET_INTERVAL = 0.01
"""Seconds between two looks once QUIET_AFTER has passed without news."""
QUIET_AFTER = 1.0
"""Seconds without news after which the counter is looked at less often."""


class Watching:
    """``task_wait`` and ``event_wait`` for :class:`~tenure.store.sqlite.SQLiteStore`."""

    _local: threading.local
    _use: Callable[[], AbstractContextManager[sqlite3.Connection]]

    def task_wait(self, topics: Sequence[str] | None, timeout: float) -> bool:
        """SQLite sends no notifications, so watch instead: every couple of
        milliseconds, read the database's change counter (no I/O); when another
        connection has committed, say "woken" if a task of ``topics`` is runnable.
        An idle worker thus starts a new task within milliseconds, and a commit
        that enqueued nothing for it costs one indexed read, never a write."""
        params = {"topics": None if topics is None else json.dumps(list(topics))}
        query = "runnable_any" if topics is None else "runnable_topics"

        def runnable(conn: sqlite3.Connection) -> bool:
            found = conn.execute(Q[query], {**params, "now": epoch_or_now(None)}).fetchone()
            return found is not None

        return self._watch("tasks", timeout, runnable)

    def event_wait(self, timeout: float) -> bool:
        """Watch the change counter as :meth:`task_wait` does: any commit by
        another connection may have appended events."""
        return self._watch("events", timeout, lambda conn: True)

    def _watch(self, what: str, timeout: float, news: Callable[[sqlite3.Connection], bool]) -> bool:
        """Until ``timeout``, look at the change counter every WATCH_INTERVAL; True
        once it moved since this thread's last look for ``what`` and ``news``
        holds."""
        deadline = time.monotonic() + validate_seconds(timeout, "timeout", allow_zero=True)
        seen, heard = f"seen_{what}", f"heard_{what}"
        if not hasattr(self._local, heard):
            setattr(self._local, heard, time.monotonic())
        last_news: float = getattr(self._local, heard)
        while True:
            with self._use() as conn:
                version = conn.execute(Q["data_version"]).fetchone()[0]
                changed = version != getattr(self._local, seen, version)
                setattr(self._local, seen, version)
                now = time.monotonic()
                if changed and news(conn):
                    setattr(self._local, heard, now)
                    return True
            left = deadline - now
            if left <= 0:
                return False
            quiet = now - last_news >= QUIET_AFTER
            time.sleep(min(QUIET_INTERVAL if quiet else WATCH_INTERVAL, left))
