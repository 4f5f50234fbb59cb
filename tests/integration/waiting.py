"""``task_wait`` on a thread of its own, and what a LISTEN connection was sent,
for the PostgreSQL wake-up tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import psycopg

from tenure.store import Store

WAKE_BOUND = 5.0
"""Seconds within which a waiter must wake; its own timeout is far longer."""


def heard(
    listening: psycopg.Connection[Any], url: str, channel: str = "tenure_tasks"
) -> list[psycopg.Notify]:
    """The notifications ``listening`` was sent up to now: a marker notified now
    on ``channel`` (which ``listening`` listens to) arrives after everything
    committed before it (one queue, in commit order), so no wait for what does
    not come."""
    with psycopg.connect(url, autocommit=True) as marking:
        marking.execute("SELECT pg_notify(%s, 'marker')", (channel,))
    found = []
    for notification in listening.notifies(timeout=WAKE_BOUND):
        if notification.payload == "marker":
            return found
        found.append(notification)
    raise AssertionError(f"the marker did not come within {WAKE_BOUND} s")


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
