"""Tells a worker within about a second that a task it runs was cancelled.

The keepalive learns of a cancel only at its next extension, ``lease / 3``
later (10 s by default). A cancel (or a revocation) of a running task appends
an event, a transition out of ``running``, and every store already wakes a
follower as events are appended (PostgreSQL's listener, SQLite's watch on its
change counter). So this thread follows the event log from its tail, and an
event that takes a task this worker runs out of ``running`` has that task's
lease extended at once, alone: the extension is refused if the lease is gone,
and the keepalive's refusal path then ends the execution (the cooperative flag
``tenure.current().cancelled`` is set, a coroutine is cancelled, a child process
killed). The event is only a hint, the fenced extension decides: an old event of
a task this worker has reserved again costs one extension and stops nothing.

Why the event log and not a new notification: it needs no schema change, both
stores wake its followers already, and it sees cancels from anywhere (the
command line, the API, the dashboard, another process's ``app.tasks.cancel``).
What it costs: each worker reads the events appended while it runs tasks, at
most one read every ``GAP`` seconds, in pages (a worker with nothing running
reads nothing, not even at start: the tail is read when it first holds tasks,
their leases checked once then; what accumulated meanwhile is read when it runs
one again). A cursor pruned by retention meanwhile restarts from the tail with
every running task's lease checked once, so nothing is missed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from tenure.errors import EventsPruned, StoreError
from tenure.store import Store
from tenure.task import Status
from tenure.worker.held import Held, Holdings

log = logging.getLogger("tenure.worker")

GAP = 0.2
"""Seconds between two reads of the event log at least: a busy log is read in
batches, and a cancel still reaches its task well within a second."""
PAGE = 1000
CLOSE_WAIT = 1.0


class CancelWatch:
    """A thread that follows the event log and has ``check`` look at the leases
    of running tasks that events took out of ``running``."""

    def __init__(
        self, store: Store, holdings: Holdings, check: Callable[[list[Held]], None]
    ) -> None:
        self.store = store
        self.holdings = holdings
        self.check = check
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tenure-cancel-watch", daemon=True)
        self._cursor: str | None = None
        self._started = False

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
            subscription = self.store.event_notify(self._wake)
        except StoreError as exc:
            log.warning("cancels reach tasks at the next keepalive only: %s", exc)
            return
        try:
            while not self._stop.is_set():
                self._wake.wait(self.store.event_poll)
                self._wake.clear()
                if self._stop.is_set():
                    return
                if self.holdings.unfinished():
                    self._follow()
                self._stop.wait(GAP)
        finally:
            subscription()

    def _tail(self) -> str | None:
        newest = self.store.event_tail(limit=1)
        return newest[0].cursor if newest else None

    def _follow(self) -> None:
        """Read the events appended since the last read; check the leases of the
        running tasks they took out of ``running``."""
        touched: set[str] = set()
        try:
            if not self._started:  # the log's tail, read once the worker first holds tasks
                self._cursor, self._started = self._tail(), True
                touched = {held.task.id for held in self.holdings}  # what came before it
            while True:
                page = self.store.event_page(after=self._cursor, limit=PAGE)
                for event in page.events:
                    if event.from_status is Status.RUNNING and event.to_status is not None:
                        touched.add(event.task_id)
                if page.events:
                    self._cursor = page.events[-1].cursor
                if len(page.events) < PAGE:
                    break
        except EventsPruned:
            self._cursor = self._tail()
            touched = {held.task.id for held in self.holdings}
        except StoreError as exc:
            log.debug("the event log could not be read (the keepalive still checks): %s", exc)
        running = [h for h in self.holdings if h.running and not h.ended]
        hits = [held for held in running if held.task.id in touched]
        if hits:
            self.check(hits)
