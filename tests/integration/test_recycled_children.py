"""Process-pool children replaced by fresh ones between two tasks, with a real
``tenure worker --pool processes``: after ``--max-tasks-per-child`` tasks, and
once a child's resident memory reaches ``--max-memory-per-child``; no task is
lost or run twice on the way."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from tenure import Status, Store
from tenure.store import TaskFilter
from tests.apps import recycled
from tests.integration.workers import WorkerProcess, enqueue, wait_for

pytestmark = pytest.mark.slow

APP = "tests.apps.recycled:app"


def results(store: Store, count: int) -> list[int]:
    """The pids that ran the topic's tasks, once ``count`` are done, in order."""
    done = TaskFilter(topic="recycled", status=Status.DONE)
    wait_for(lambda: store.task_count(done) == count, f"{count} tasks done", timeout=90)
    tasks = store.task_list(TaskFilter(topic="recycled"), limit=count + 1, newest_first=False)
    assert all(t.attempts == 1 for t in tasks.tasks)
    return [t.result for t in tasks.tasks]  # type: ignore[misc]


@pytest.fixture
def worker(store_url: str, request: pytest.FixtureRequest) -> Iterator[WorkerProcess]:
    process = WorkerProcess(store_url, "--pool", "processes", "--concurrency", "2",
                            *request.param, app=APP)  # fmt: skip
    yield process
    process.stop()


@pytest.mark.parametrize("worker", [("--max-tasks-per-child", "3")], indirect=True)
def test_a_child_is_replaced_after_so_many_tasks(store: Store, worker: WorkerProcess) -> None:
    for _ in range(20):
        enqueue(store, recycled.pid)
    ran = Counter(results(store, 20))
    assert max(ran.values()) <= 3 and len(ran) >= 7, ran
    assert "replaced after 3 tasks" in worker.wait_for_log("replaced after")


@pytest.mark.parametrize("worker", [("--max-memory-per-child", "150")], indirect=True)
def test_a_child_is_replaced_once_its_memory_passes_the_limit(
    store: Store, worker: WorkerProcess
) -> None:
    for _ in range(6):
        enqueue(store, recycled.hoard, 60)
    pids = results(store, 6)
    # A child keeps what each task hoards: its third task takes it past 150 MB
    # (with the interpreter and the App), and it is replaced before a fourth.
    assert max(Counter(pids).values()) <= 3 and len(set(pids)) >= 2, pids
    assert "MB resident" in worker.wait_for_log("MB resident")
