"""Handing held tasks back to pending: at shutdown, the tasks that never began
and, past the grace, the ones still running; while working, the unbegun tasks
of a topic paused since they were reserved. Releasing spares another worker
the wait for their leases to lapse, and gives back the attempt."""

from __future__ import annotations

import logging

from tenure.errors import StoreUnavailable, TenureError
from tenure.store import Store
from tenure.worker.executors import Executor
from tenure.worker.held import Held, Holdings

log = logging.getLogger("tenure.worker")


def release(
    store: Store,
    executor: Executor,
    holdings: Holdings,
    helds: list[Held],
    why: str = "at shutdown",
    *,
    store_down: bool = False,
) -> int:
    """Abandon and release ``helds`` to pending, saying ``why`` for each; how
    many were left leased. It stops at the first outage: the others would wait
    out the same one, each for the pool's timeout."""
    left = 0
    for held in helds:
        executor.abandon(held.task.id)
        if left or store_down:
            left += 1
        else:
            try:
                store.task_release(held.lease)
                log.info("task %s released to pending %s", held.task.id, why)
            except StoreUnavailable as exc:
                log.warning("task %s could not be released: %s", held.task.id, exc)
                left += 1
            except TenureError as exc:  # its lease is gone: nothing to hand back
                log.warning("task %s could not be released: %s", held.task.id, exc)
        holdings.drop(held)
    return left
