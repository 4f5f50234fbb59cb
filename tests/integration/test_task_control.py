"""Control from inside a task, with real ``tenure worker`` processes on each store
and each pool: ``raise tenure.Cancel(reason)`` ends the task cancelled without a
retry; ``retry_on`` retries only the exceptions it names (a timeout counts as
``TimeoutError``) and fails the others at once; ``tenure.current().cancelled``
turns true within 2 s of a cancel (the keepalive would take 10 s) and at a
timeout."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from tenure import Status, Store, Task
from tests.apps import control
from tests.integration.workers import (
    WorkerProcess,
    enqueue,
    enqueue_new,
    finished,
    wait_for,
    wait_until,
)

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


# -- the cooperative flag ---------------------------------------------------------


def _stamp(folder: Path, name: str) -> float:
    path = folder / name
    wait_for(path.exists, f"the task's {name!r} mark", timeout=30)
    return float(path.read_text())


def test_a_cancel_reaches_a_running_task_within_two_seconds(
    store: Store, worker: WorkerProcess, tmp_path: Path
) -> None:
    """With the default 30 s lease, whose keepalive comes every 10 s: the flag a
    task watches is set within 2 s of the cancel, on every pool (a coroutine is
    cancelled as fast; a child process is told, and stops by itself)."""
    functions = [control.watches_flag, control.async_watches_flag]
    for number, function in enumerate(functions):
        folder = tmp_path / str(number)
        folder.mkdir()
        task = enqueue(store, function, str(folder))
        _stamp(folder, "started")
        cancelled_at = time.time()
        cancelled = store.task_cancel(task.id)
        assert _stamp(folder, "stopped") - cancelled_at < 2.0
        worker.wait_for_log(f"task {task.id} {task.name} attempt=1/1 was cancelled")
        assert store.task_get(task.id) == cancelled  # the ending was not written


def test_the_flag_is_set_when_a_task_runs_past_its_timeout(
    store: Store, worker: WorkerProcess, tmp_path: Path
) -> None:
    function = control.watches_flag
    new = replace(function.new_task((str(tmp_path),), {}), timeout=0.5)
    task = enqueue_new(store, function.prepared(new))
    started = _stamp(tmp_path, "started")
    assert 0.4 < _stamp(tmp_path, "stopped") - started < 2.0
    failed = wait_until(store, task.id, finished)
    assert failed.error is not None and failed.error.type == "TimeoutError"


# -- progress ---------------------------------------------------------------------


def test_progress_is_stored_while_the_task_runs(
    store: Store, worker: WorkerProcess, tmp_path: Path
) -> None:
    for number, function in enumerate((control.reports, control.async_reports)):
        folder = tmp_path / str(number)
        folder.mkdir()
        task = enqueue(store, function, str(folder))
        _stamp(folder, "reported")
        running = store.task_get(task.id)
        assert running is not None and running.status is Status.RUNNING
        assert (running.progress, running.progress_note) == (0.4, "step 2 of 5")
        (folder / "seen").touch()
        done = wait_until(store, task.id, finished)
        assert (done.status, done.progress, done.progress_note) == (Status.DONE, 1.0, None)
