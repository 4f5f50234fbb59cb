"""Control from inside a task, with real ``tenure worker`` processes on each store
and each pool: ``raise tenure.Cancel(reason)`` ends the task cancelled without a
retry; ``retry_on`` retries only the exceptions it names (a timeout counts as
``TimeoutError``) and fails the others at once."""

from __future__ import annotations

import pytest

from tenure import Status, Store, Task
from tests.apps import control
from tests.integration.workers import WorkerProcess, enqueue, finished, wait_until

pytestmark = pytest.mark.slow

APP = "tests.apps.control:app"
POOLS = ("threads", "processes", "async")


@pytest.fixture(params=POOLS)
def pool(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def worker(store_url: str, workers: list[WorkerProcess], pool: str) -> WorkerProcess:
    started = WorkerProcess(store_url, "--pool", pool, "--concurrency", "4", app=APP)
    workers.append(started)
    return started


def ended(store: Store, task: Task) -> Task:
    return wait_until(store, task.id, finished, timeout=30)


def test_cancel_ends_the_task_cancelled_without_a_retry(
    store: Store, worker: WorkerProcess
) -> None:
    for function in (control.cancels, control.async_cancels):
        task = ended(store, enqueue(store, function, "nothing left to do"))
        assert (task.status, task.attempts, task.max_attempts) == (Status.CANCELLED, 1, 4)
        assert task.error is not None
        assert (task.error.type, task.error.message) == ("Cancel", "nothing left to do")
    worker.wait_for_log("cancelled itself: nothing left to do")


def test_retry_on_retries_only_the_exceptions_it_names(store: Store, worker: WorkerProcess) -> None:
    for function in (control.transient_only, control.async_transient_only):
        retried = ended(store, enqueue(store, function, "connection"))
        assert (retried.status, retried.result, retried.attempts) == (Status.DONE, 2, 2)
        failed = ended(store, enqueue(store, function, "value"))
        assert (failed.status, failed.attempts) == (Status.FAILED, 1)
        assert failed.error is not None and failed.error.type == "ValueError"
    overran = ended(store, enqueue(store, control.overruns_not_retried))
    assert (overran.status, overran.attempts) == (Status.FAILED, 1)
    assert overran.error is not None and overran.error.type == "TimeoutError"
