"""Tells a worker within about a second that a task it runs was cancelled.

The keepalive learns of a cancel only at its next extension, ``lease / 3``
later (10 s by default). A cancel or a revocation takes a running task from
its holder, and the store says so (:meth:`~tenure.store.Store.lease_notify`):
PostgreSQL's cancel and revoke statements notify ``tenure_leases``, heard on
the connection that already listens for new tasks; SQLite wakes as its change
counter moves. On a wake, if the worker runs tasks, this thread reads which of
their leases are lost (:meth:`~tenure.store.Store.leases_lost`, its running
tasks by id) and has each one found extended at once, alone: the extension is
refused since the lease is gone, and the keepalive's refusal path then ends the
execution (the cooperative flag ``tenure.current().cancelled`` is set, a
coroutine is cancelled, a child process stopped). The read is only a hint, the
fenced extension decides.

Why not follow the event log, which sees every cancel too: each worker would
read every event of the queue, everyone's endings included, to find the rare
one of its own (3,000 events a second at 1,000 tasks a second), and on
PostgreSQL its subscription would keep the event log's notifications on for
every transition. Here the hot path pays nothing: no trigger, no event read; a
wake reads as many rows as the worker runs tasks, at most once every ``GAP``,
and none when it runs nothing. A notice lost while the listener reconnects is
covered by the reconnection (every subscriber looks again) and by a look every
``POLL`` seconds while tasks run.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from tenure.errors import StoreError
from tenure.store import Store
from tenure.worker.held import Held, Holdings

log = logging.getLogger("tenure.worker")

GAP = 0.2
"""Seconds between two reads of the leases at least: a burst of wakes (SQLite's
counter moves with every commit) costs one read, and a cancel still reaches its
task well within a second."""
POLL = 5.0
"""Seconds between two reads while tasks run and nothing wakes the thread."""
CLOSE_WAIT = 1.0


class CancelWatch:
    """A thread that, woken by the store, has ``check`` look at the leases of
    the running tasks the store says are lost."""

    def __init__(
        self, store: Store, holdings: Holdings, check: Callable[[list[Held]], None]
    ) -> None:
        self.store = store
        self.holdings = holdings
        self.check = check
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tenure-cancel-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Stop the thread; wait for a read under way at most ``CLOSE_WAIT`` (a
        hung one is left to its daemon thread, as the keepalive's is)."""
        self._stop.set()
        self._wake.set()
        self._thread.join(CLOSE_WAIT)

    def _loop(self) -> None:
        try:
            subscription = self.store.lease_notify(self._wake)
        except StoreError as exc:
            log.warning("cancels reach tasks at the next keepalive only: %s", exc)
            return
        try:
            while not self._stop.is_set():
                self._wake.wait(POLL)
                self._wake.clear()
                if self._stop.is_set():
                    return
                self._look()
                self._stop.wait(GAP)
        finally:
            subscription()

    def _look(self) -> None:
        """Read which running tasks' leases are lost; check those."""
        running = [h for h in self.holdings if h.running and not h.ended and not h.wrote_own]
        if not running:
            return
        try:
            lost = set(self.store.leases_lost([held.lease for held in running]))
        except StoreError as exc:
            log.debug("the leases could not be read (the keepalive still checks): %s", exc)
            return
        hits = [held for held in running if held.task.id in lost]
        if hits:
            self.check(hits)
