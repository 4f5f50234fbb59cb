"""Deadlines with real worker processes (3 processes of 4 threads each) that
drain a backlog longer than the deadline: every task that started, started
before its deadline; the others never ran, and the scheduler hosted by the
workers ended them cancelled, ``Expired``; none is lost."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tenure import Status, Store
from tenure.store import TaskFilter
from tests.apps.basic import naps
from tests.integration.workers import WorkerProcess, wait_for

pytestmark = pytest.mark.slow

TASKS = 400
NAP = 0.05
EXPIRES = 1.0
"""12 threads start about 240 tasks a second: the backlog outlasts the deadline."""


@pytest.fixture
def workers(store_url: str) -> Iterator[list[WorkerProcess]]:
    started = [WorkerProcess(store_url, "--concurrency", "4") for _ in range(3)]
    yield started
    for process in started:
        process.stop()


def test_an_expired_task_never_starts(store: Store, workers: list[WorkerProcess]) -> None:
    made = naps.options(expires=EXPIRES)
    tasks = store.task_create_many([made.new_task((NAP,), {}) for _ in range(TASKS)])
    ended = TaskFilter(topic="basic")
    wait_for(lambda: all(t.finished for t in store.task_list(ended, limit=TASKS).tasks),
             "every task ended (run, or swept)", timeout=60)  # fmt: skip
    final = store.task_list(ended, limit=TASKS).tasks
    assert {t.id for t in final} == {t.id for t in tasks}
    ran = [t for t in final if t.status is Status.DONE]
    swept = [t for t in final if t.status is Status.CANCELLED]
    assert ran and swept and len(ran) + len(swept) == TASKS
    for task in ran:
        assert task.started_at is not None and task.expires_at is not None
        assert task.started_at < task.expires_at, task
    for task in swept:
        assert task.started_at is None and task.attempts == 0
        assert task.error is not None and task.error.type == "Expired"
