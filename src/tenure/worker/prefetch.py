"""How many tasks a worker reserves beyond those it runs.

Tasks held waiting are the worker's buffer against the store's round trip: while
a reservation travels, the running ones end and the waiting ones start. A fixed
number fits one kind of task only. Too few, and a worker of short tasks spends
its time waiting on reservations of a handful each; too many, and a worker of
long tasks sits on tasks that an idle worker elsewhere could run now (the
prefetch complaint every queue with a fixed multiplier hears).

By default the number follows the work: enough waiting tasks to keep every
slot busy for about two reservations, reckoned from how long reservations and
executions have lately taken. A worker of one-second tasks keeps the floor (as
many as it runs); a worker of sub-millisecond tasks reserves hundreds per round
trip, each batch only a few milliseconds of its work. A number given by the
user is kept as it is.
"""

from __future__ import annotations

import math

CEILING = 256
"""Waiting tasks at most, however short the tasks."""
ROUND_TRIPS = 2.0
"""Reservations' worth of work to hold waiting."""
WEIGHT = 0.2
"""Of each new observation in the moving averages."""


class Prefetch:
    """The number of tasks to hold waiting, fixed or following the work."""

    def __init__(self, concurrency: int, fixed: int | None) -> None:
        self.concurrency = concurrency
        self.fixed = fixed
        self._reserve_seconds: float | None = None
        self._run_seconds: float | None = None

    @property
    def ahead(self) -> int:
        """Tasks to hold beyond those running."""
        if self.fixed is not None:
            return self.fixed
        if self._reserve_seconds is None or not self._run_seconds:
            return self.concurrency
        rate = self.concurrency / self._run_seconds  # tasks the slots end per second
        wanted = math.ceil(ROUND_TRIPS * self._reserve_seconds * rate)
        return max(self.concurrency, min(CEILING, wanted))

    def reserved(self, seconds: float) -> None:
        """A reservation took ``seconds`` (round trip included)."""
        self._reserve_seconds = _average(self._reserve_seconds, seconds)

    def ran(self, seconds: float) -> None:
        """An execution took ``seconds``."""
        self._run_seconds = _average(self._run_seconds, seconds)


def _average(current: float | None, seen: float) -> float:
    return seen if current is None else current + WEIGHT * (seen - current)
