"""Tasks whose name this worker does not know: given back during a rolling deploy.

During a deploy, old workers and new ones share a store, and a task of a name
only the new code declares may be reserved by an old worker first. Such a worker
does not fail it: it gives the task back for another worker, without spending an
attempt, until the task has waited ``unknown_name_grace`` seconds; then it fails
as an unknown name always did, with an error that names the task and the names
this worker knows.

How, with the store contract as it is (no new column, no new operation):

- **Given back by a snooze.** ``task_snooze`` is the one write that hands a held
  task back *later* and does not count the attempt (the reservation counted it;
  the snooze takes it back: see the conformance test
  ``test_snooze_pauses_without_spending_an_attempt``). ``task_release`` keeps the
  attempt too, but makes the task pending at once: the old worker, which
  reserves again at once, would spin on it. A snoozed task is woken to pending
  by the scheduler's supervisor (every half second by default), as every
  snoozed task is; the decision is made in the fetch loop, before any pool sees
  the task, so no ``started`` hook fires for it.
- **The pause.** :func:`pause` seconds: one second early on, so that a new
  worker gets the task within a second or two of its start; longer as the task
  waits (a tenth of its wait, up to ten seconds), so that old workers facing
  many such tasks for minutes do not write a snooze for each every second; and
  spread by up to half again, so the old workers' snoozes do not fall due
  together.
- **The grace** runs from when the task became due: its ``run_at`` if it has one
  (a delayed task, or a retry's due time), else its ``created_at``; it is
  measured against the reservation's ``started_at``. Both are written by the
  store with the store's clock, in the same row: no worker's clock is compared
  with the store's, and no read is added. A task an operator sends back with
  ``tenure tasks retry`` (its ``run_at`` cleared) counts from its creation again.
- **Told as a snooze.** The store shows the task snoozed, so metrics count it as
  ``snoozed`` and the ``snoozed`` hooks are called, with an ``UnknownTask``
  error on the outcome (a task's own ``Snooze`` has none): a release is no
  failure. The log says it at INFO, at most once a minute per name, with how
  many were given back since the last line.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import Any

from tenure.registry import Registry
from tenure.task import Task, TaskError
from tenure.worker.runner import Raised, Snoozed

log = logging.getLogger("tenure.worker")

UNKNOWN_TASK = "UnknownTask"
"""The error type of a task whose name the worker does not know."""
DEFAULT_GRACE = 600.0
"""Seconds a task of an unknown name is given back before it fails: ten minutes."""
PAUSE_MIN = 1.0
PAUSE_MAX = 10.0
PAUSE_SPREAD = 0.5
LOG_EVERY = 60.0
"""Seconds between two log lines about the same unknown name, at least."""


def waited(task: Task) -> float:
    """Seconds from when ``task`` became due to this reservation, by the store's clock."""
    due = task.run_at or task.created_at
    if due is None or task.started_at is None:
        return 0.0
    return max(0.0, (task.started_at - due).total_seconds())


def pause(waited_for: float, rand: random.Random | None = None) -> float:
    """Seconds a task that waited ``waited_for`` seconds is given back for."""
    base = min(PAUSE_MAX, max(PAUSE_MIN, waited_for / 10))
    return base * (rand or random).uniform(1.0, 1.0 + PAUSE_SPREAD)


def unknown_error(registry: Registry, name: str, detail: str = "") -> TaskError:
    """The error of a task called ``name`` that ``registry`` does not have."""
    known = ", ".join(sorted(registry)) or "none"
    message = f"no task named {name!r} is registered in this worker (known: {known})"
    return TaskError(UNKNOWN_TASK, message + detail)


class UnknownNames:
    """What a worker does with a task whose name it does not know."""

    def __init__(self, registry: Registry, grace: float) -> None:
        self.registry = registry
        self.grace = grace
        self._told: dict[str, tuple[float, int]] = {}  # name → last line, given back since
        self._lock = threading.Lock()

    def ending(self, task: Task) -> Snoozed | Raised | None:
        """How ``task`` ends here without running, or ``None`` if its name is known."""
        if task.name in self.registry:
            return None
        age = waited(task)
        if age < self.grace:
            return Snoozed(pause(age), unknown_error(self.registry, task.name))
        detail = (
            f"; no worker that knows it took it in the {age:.0f}s since it was due "
            f"(unknown-name grace: {self.grace:g}s)"
        )
        return Raised(unknown_error(self.registry, task.name, detail), final=True)

    def tell(self, task: Task, seconds: float, extra: dict[str, Any]) -> None:
        """Log that ``task`` was given back, at most once per :data:`LOG_EVERY`
        seconds per name."""
        now = time.monotonic()
        with self._lock:
            last, since = self._told.get(task.name, (-LOG_EVERY, 0))
            if now - last < LOG_EVERY:
                self._told[task.name] = (last, since + 1)
                return
            self._told[task.name] = (now, 0)
        more = f" ({since} more given back since the last line)" if since else ""
        log.info(
            "task %s %s: no task of this name is registered in this worker (an older "
            "worker during a deploy?): given back for %.1fs for a worker that knows it, "
            "no attempt spent; it fails once it waited %gs%s",
            task.id,
            task.name,
            seconds,
            self.grace,
            more,
            extra=extra,
        )
