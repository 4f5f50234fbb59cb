"""Priority ageing with real worker processes (3 processes of 4 threads
each): a producer keeps higher-priority tasks waiting at every moment, fresh
ones, as a steady flood does; a low-priority task, taken by priority alone,
would wait for the flood to stop. With the topic ageing, it starts while the
flood goes on, once its raise passes the flood's priority."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tenure import Status, Store, Task
from tenure.store import TaskFilter
from tests.apps.basic import naps
from tests.integration.workers import WorkerProcess, enqueue, wait_for

pytestmark = pytest.mark.slow

STEP = 0.5
"""Seconds a step of ageing: the low task passes priority 5 after about 3 s."""
FLOOD = 5
"""The flood's priority."""
WAITING = 40
"""Flood tasks kept pending at every moment: more than the workers reserve at
once (3 x (4 running + 4 ahead)), and a sixth of a second of their drain, so
the flood's first ones are always fresh."""


def high(store: Store) -> list[Task]:
    tasks = [dataclasses.replace(naps.new_task((0.05,), {}), priority=FLOOD) for _ in range(20)]
    return store.task_create_many(tasks)


@pytest.fixture
def flood(store: Store) -> Iterator[threading.Event]:
    """Keeps at least WAITING flood tasks pending until told to stop."""
    stop = threading.Event()

    def top_up() -> None:
        while not stop.is_set():
            if store.task_count(TaskFilter(topic="basic", status=Status.PENDING)) < WAITING:
                high(store)
            time.sleep(0.01)

    producer = threading.Thread(target=top_up, daemon=True)
    producer.start()
    yield stop
    stop.set()
    producer.join(10)


@pytest.fixture
def workers_holding_few(start: Callable[..., WorkerProcess]) -> list[WorkerProcess]:
    return [start("--concurrency", "4", "--prefetch", "4") for _ in range(3)]


def test_an_ageing_topics_low_priority_task_starts_during_a_flood(
    store: Store, workers_holding_few: list[WorkerProcess], flood: threading.Event
) -> None:
    store.topic_ageing("basic", STEP, most=20)
    wait_for(lambda: store.task_count(TaskFilter(topic="basic", status=Status.DONE)) >= 100,
             "the flood under way")  # fmt: skip
    low = enqueue(store, naps, 0.01)
    deadline = time.monotonic() + 30
    while (found := store.task_get(low.id)) is not None and found.started_at is None:
        assert time.monotonic() < deadline, "the low-priority task never started"
        time.sleep(0.05)
    started = found.started_at
    assert started is not None
    waited = (started - low.created_at).total_seconds()
    assert waited >= FLOOD * STEP, waited  # it started on its raise, not in a lull
    # Flood tasks created before its start were still waiting: it passed
    # them, the flood did not run dry.
    flood_tasks = store.task_list(TaskFilter(topic="basic"), limit=10_000).tasks
    passed = [
        t for t in flood_tasks
        if t.priority == FLOOD and t.created_at < started
        and (t.started_at is None or t.started_at > started)
    ]  # fmt: skip
    assert len(passed) >= WAITING // 2, len(passed)
    flood.set()
