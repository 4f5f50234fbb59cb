"""``task_wait`` on a thread of its own, for the PostgreSQL wake-up tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from tenure.store import Store

WAKE_BOUND = 5.0
"""Seconds within which a waiter must wake; its own timeout is far longer."""


class Waiting:
    """``store.task_wait(topics, timeout)`` on a thread of its own, once that
    thread is registered as waiting: PostgreSQL notifies only registered
    waiters, and a thread's first wait registers it and returns at once (True:
    look again first). So whatever commits after the constructor returns must
    wake the wait; ``result`` blocks until it returns."""

    def __init__(self, store: Store, topics: Sequence[str] | None, timeout: float) -> None:
        self.woke: bool | None = None
        self.seconds = 0.0
        self._registered, self._done = threading.Event(), threading.Event()
        threading.Thread(target=self._run, args=(store, topics, timeout), daemon=True).start()
        assert self._registered.wait(WAKE_BOUND), "task_wait did not register in time"

    def _run(self, store: Store, topics: Sequence[str] | None, timeout: float) -> None:
        store.task_wait(topics, 0)
        self._registered.set()
        started = time.monotonic()
        self.woke = store.task_wait(topics, timeout)
        self.seconds = time.monotonic() - started
        self._done.set()

    def result(self, timeout: float = WAKE_BOUND) -> bool | None:
        assert self._done.wait(timeout), f"task_wait did not return within {timeout} s"
        return self.woke
