"""Writes what running tasks report with ``tenure.current().progress``, and
the endings they write themselves with ``tenure.current().complete_in``.

The write is the store's ``task_progress``, fenced by the lease, made in the
thread that reported (a pool thread, the async pool's loop, or, for the process
pool, the parent's thread that waits on the child): a task learns nothing from
it but may go on. Progress is advisory: a refusal (the lease is gone; the task
sees ``cancelled``) is dropped, and a store that cannot be reached is logged,
never raised into the task. No event is written for it: a task reporting in
every step of a loop would flood the log that followers and the dashboard read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from tenure.control import Link
from tenure.errors import InvalidInput, StoreError, TenureError
from tenure.store import Store
from tenure.task import Lease
from tenure.worker.held import Holdings

log = logging.getLogger("tenure.worker")

RECORDED = "recorded"
"""What the parent answers each of a child's ``Progressed`` with, once written."""


class Progress(Protocol):
    """The writes a running task makes under its lease, to the worker's store."""

    def __call__(self, lease: Lease, fraction: float, note: str | None) -> None:
        """Write the task's progress."""

    def complete_in(self, lease: Lease, connection: Any, result: Any) -> None:
        """Write the task's ending on ``connection``, in its open transaction."""


def link_of(lease: Lease, progress: Progress | None) -> Link:
    """A new execution's link: its stop flag, and its progress and own ending
    written under ``lease``."""
    if progress is None:
        return Link()
    return Link(report=partial(progress, lease), complete=partial(progress.complete_in, lease))


@dataclass(frozen=True, slots=True)
class Progressed:
    """What a pool child sends its parent for each ``progress()`` of its task."""

    fraction: float
    note: str | None


class ProgressWriter:
    """``progress(lease, fraction, note)`` for an executor, to ``store``; a task
    that writes its own ending is marked in ``holdings``."""

    def __init__(self, store: Store, holdings: Holdings | None = None) -> None:
        self.store = store
        self.holdings = holdings

    def __call__(self, lease: Lease, fraction: float, note: str | None) -> None:
        try:
            self.store.task_progress(lease, fraction, note)
        except InvalidInput:
            raise  # checked in the task already: a bug, not a state
        except StoreError as exc:
            log.warning("task %s: progress not recorded: %s", lease.task_id, exc)
        except TenureError as exc:  # the lease is gone: the execution is let go
            log.debug("task %s: progress dropped: %s", lease.task_id, exc)

    def complete_in(self, lease: Lease, connection: Any, result: Any) -> None:
        """Unlike progress, every refusal is raised: the task's transaction
        must not commit without its ending."""
        self.store.task_complete(lease, result, connection=connection)
        held = None if self.holdings is None else self.holdings.get(lease.task_id)
        if held is not None and held.lease == lease:
            held.wrote_own = True
