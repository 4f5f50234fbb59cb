"""An ending wakes the fetch loop only when it would reserve (and a written
batch of endings always does): a backlog drains without ever waiting out the
idle poll, whatever the slots and prefetch, in fewer reservations than tasks."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

import tenure
from tenure import Status
from tenure.store import ReserveParams, Store, TaskFilter
from tenure.store.waking import Wakeups
from tenure.worker.worker import Worker

POLL = 30.0
"""Far longer than any drain here: a missed wake-up would show as a stall."""


def deaf(store: Store) -> None:
    """Keep the store from waking the worker as tasks change: only endings may."""

    def notify(topics: Sequence[str] | None, wake: threading.Event) -> Wakeups:
        return Wakeups(lambda: None)

    store.task_notify = notify  # type: ignore[method-assign]


@pytest.mark.parametrize(("concurrency", "prefetch"), [(1, 0), (1, None), (4, None), (3, 7)])
def test_a_backlog_drains_without_waiting_for_the_poll(
    tmp_path: Path, concurrency: int, prefetch: int | None
) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 'w.db'}")

    @app.task(topic="t")
    def noop(number: int) -> int:
        return number

    noop.enqueue_many([(n,) for n in range(300)])
    store = app.store
    deaf(store)
    reserved: list[int] = []
    reserve = store.task_reserve

    def counted(params: ReserveParams) -> list[tenure.Task]:
        tasks = reserve(params)
        reserved.append(len(tasks))
        return tasks

    store.task_reserve = counted  # type: ignore[method-assign]
    worker = Worker(
        store,
        app.registry,
        concurrency=concurrency,
        prefetch=prefetch,
        poll_interval=POLL,
        scheduler=None,
    )
    thread = threading.Thread(target=worker.run, daemon=True)
    began = time.monotonic()
    thread.start()
    try:
        while store.task_count(TaskFilter(status=Status.DONE)) < 300:
            assert time.monotonic() - began < POLL / 2, f"stalled after {reserved}"
            time.sleep(0.02)
    finally:
        worker.stop()
        thread.join(10)
    assert sum(reserved) == 300
    if prefetch is None and concurrency == 4:  # fewer, bigger reservations than one per task
        assert len([n for n in reserved if n]) < 300 / 2
    app.close()
