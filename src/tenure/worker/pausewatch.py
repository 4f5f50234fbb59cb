"""Tasks a worker reserved ahead whose topic was paused since.

A pause stops reservations at once (the reserve statements read it), but a
worker holds a few tasks ready beside its running ones (prefetch). Without a
look at the pause, those would start after it, as late as their turn comes: a
minute on, for a worker of minute-long tasks. So the fetch loop, once a poll
while tasks wait in it, reads the paused topics (a small table) and hands back
its unbegun tasks of them to pending, their attempts given back.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tenure.errors import TenureError
from tenure.store import Store
from tenure.worker.held import Held, Holdings


class PauseWatch:
    """Finds, at most once per ``every`` seconds, the held tasks not begun
    whose topic is paused, and ends them in the holdings."""

    def __init__(
        self, store: Store, every: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.store = store
        self.every = every
        self.clock = clock
        self._next = 0.0

    def paused(self, holdings: Holdings) -> list[Held]:
        """The waiting held tasks of a paused topic, now ended here (for the
        caller to release); none when no task waits or the look is not due."""
        if not holdings.waiting() or self.clock() < self._next:
            return []
        self._next = self.clock() + self.every
        try:
            topics = {paused.topic for paused in self.store.topics_paused()}
        except TenureError:  # the store is down: the next poll looks again
            return []
        if not topics:
            return []
        return holdings.end_waiting(lambda held: held.task.topic in topics)
