"""A tenure App for the tests of process-pool children replaced between two
tasks (``--max-tasks-per-child``, ``--max-memory-per-child``). Its store URL
comes from $TENURE_URL."""

from __future__ import annotations

import os
import time

import tenure

app = tenure.App()

HOARD: list[bytes] = []
"""What ``hoard`` keeps, for as long as its process lives: a leak."""


@app.task(topic="recycled")
def pid() -> int:
    return os.getpid()


@app.task(topic="recycled")
def hoard(megabytes: int) -> int:
    """Keep ``megabytes`` of touched memory for good, and say where."""
    HOARD.append(os.urandom(megabytes * 1_000_000))
    return os.getpid()


@app.task(topic="recycled")
def begins(nap: float) -> float:
    """Say when it really began (the wall clock), after a nap."""
    began = time.time()
    time.sleep(nap)
    return began
