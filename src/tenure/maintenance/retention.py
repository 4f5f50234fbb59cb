"""Retention: finished tasks and events deleted once older than the retention,
at the pace they arrive, whatever that pace.

A fixed number of rows a minute falls behind any queue busier than that
number (every task writes three events or more), and the log then grows
without end. Here each prune deletes in bounded batches, each one short
statement in a transaction of its own (no long lock, and small transactions
for a replica to replay), sized by the store and followed by the rest it asks
for (SQLite's one write lock is let go long enough for waiting writers to take
it), until nothing older is left or the step's time budget is spent, and the
scheduler prunes again at its next cycle for as long as prunes find something
to delete (a queue at work: nothing outlives the retention by more than a cycle
or two, and the deletes come as a trickle).
A prune that found nothing waits ``idle_every`` seconds for the next, so an
idle store is not written to twice a second (on SQLite, each prune takes the
write lock). The work grows with the backlog, so a scheduler back after a day,
or a retention just shortened, clears what piled up at the store's own pace,
a budget per cycle at a time, and supervision still runs between the cycles.

When rows are left it counts them (up to a cap:
:meth:`~tenure.store.Store.retention_backlog`) for the cycle's report and the
metrics, and logs a WARNING once a backlog has lasted :data:`BEHIND_AFTER`
seconds (then at most once a :data:`BEHIND_AFTER`), and INFO when it is gone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from tenure.store import Store
from tenure.store.operating import BACKLOG_CAP
from tenure.store.types import Backlog

log = logging.getLogger("tenure.scheduler")

BUDGET = 0.5
"""Seconds of pruning in one scheduler cycle, at most (a batch started is
finished)."""
IDLE_EVERY = 60.0
"""Seconds between two prunes while they find nothing to delete."""
BEHIND_AFTER = 300.0
"""Seconds a backlog lasts before retention is said to be falling behind."""


NOTHING_LEFT = Backlog(0, 0, BACKLOG_CAP)


@dataclass(slots=True)
class Pruned:
    """One prune: the rows deleted, and what was left."""

    tasks: int = 0
    events: int = 0
    backlog: Backlog = NOTHING_LEFT


class Retention:
    """Deletes what is older than ``retention`` seconds in ``batch``-row
    statements (the store's :attr:`~tenure.store.backend.Backend.prune_batch`
    by default, resting as its ``prune_rest`` says between two), for ``budget``
    seconds at most each time it runs (``clock``, ``sleep``)."""

    def __init__(
        self,
        store: Store,
        retention: float,
        *,
        batch: int | None = None,
        budget: float = BUDGET,
        idle_every: float = IDLE_EVERY,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.store = store
        self.retention = retention
        self.batch = batch or store.prune_batch
        self.rest = store.prune_rest
        self.budget = budget
        self.idle_every = idle_every
        self.clock = clock
        self.sleep = sleep
        self._next_idle = 0.0
        self._found = False
        self._behind_since: float | None = None
        self._warned_at: float | None = None

    def due(self) -> bool:
        """Whether to prune now: the last prune found something, or it found
        nothing ``idle_every`` seconds ago."""
        return self._found or self.clock() >= self._next_idle

    def prune(self) -> Pruned:
        """Delete batches of old tasks and events until none is left or the
        budget is spent; count what is left, if anything."""
        deadline = self.clock() + self.budget
        pruned = Pruned()
        tasks_left = events_left = True
        while tasks_left or events_left:
            if tasks_left:
                deleted = self._batch(self.store.task_prune)
                pruned.tasks += deleted
                tasks_left = deleted == self.batch
            if events_left:
                deleted = self._batch(self.store.event_prune)
                pruned.events += deleted
                events_left = deleted == self.batch
            if self.clock() >= deadline:
                break
        if tasks_left or events_left:  # or the last batch took exactly the rest
            pruned.backlog = self.store.retention_backlog(self.retention)
        self._found = bool(pruned.tasks or pruned.events)
        self._next_idle = self.clock() + self.idle_every
        self._tell(pruned)
        return pruned

    def _batch(self, prune: Callable[..., int]) -> int:
        """One batch of ``prune``, then the store's rest if it deleted anything."""
        started = self.clock()
        deleted = prune(self.retention, limit=self.batch)
        if deleted and self.rest:
            self.sleep((self.clock() - started) * self.rest)
        return deleted

    def _tell(self, pruned: Pruned) -> None:
        """Log a lasting backlog (WARNING) and its end (INFO)."""
        now = self.clock()
        backlog = pruned.backlog
        if not backlog.rows:
            if self._warned_at is not None:
                log.info("retention caught up: nothing older than %.0f s is left", self.retention)
            self._behind_since = self._warned_at = None
            return
        if self._behind_since is None:
            self._behind_since = now
        lasted = now - self._behind_since
        if lasted < BEHIND_AFTER or (
            self._warned_at is not None and now - self._warned_at < BEHIND_AFTER
        ):
            return
        self._warned_at = now
        log.warning(
            "retention is falling behind: %s finished tasks and %s events older than %.0f s "
            "are still there after %.0f s of pruning (%d tasks and %d events this cycle); "
            "give the scheduler a larger prune budget (--prune-budget)",
            _count(backlog.tasks, backlog.cap), _count(backlog.events, backlog.cap),
            self.retention, lasted, pruned.tasks, pruned.events,
        )  # fmt: skip


def _count(found: int, cap: int) -> str:
    """A capped count as people read it: ``100000+`` when the cap was reached."""
    return f"{found}+" if found >= cap else str(found)
