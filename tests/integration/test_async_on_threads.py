"""``async def`` tasks on pools other than the async one, with real ``tenure worker``
processes on each store: the default thread pool runs them on its threads' own
event loops (``tenure.current()`` visible inside), cancels one that passes its
timeout and keeps its thread; the process pool runs them in its children."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenure import Status, Store
from tests.apps import basic
from tests.integration.workers import enqueue, finished, wait_for, wait_until

pytestmark = pytest.mark.slow


def test_an_async_task_completes_on_the_default_pool(store: Store, start) -> None:  # type: ignore[no-untyped-def]
    worker = start()  # no --pool: threads
    assert [row.pool for row in store.worker_list()] == ["threads"]
    added = enqueue(store, basic.async_add, 2, b=3)
    asked = enqueue(store, basic.async_whoami)
    done = wait_until(store, added.id, finished)
    assert (done.status, done.result, done.error) == (Status.DONE, 5, None)
    who = wait_until(store, asked.id, finished)
    assert who.status is Status.DONE, who.error
    assert who.result["pid"] == worker.pid and who.result["thread"].startswith("tenure-task-")
    assert (who.result["token"], who.result["attempt"]) == (who.lease_token, 1)


def test_an_async_task_past_its_timeout_is_cancelled_and_its_thread_serves_on(  # type: ignore[no-untyped-def]
    store: Store, start, tmp_path: Path
) -> None:
    start("--concurrency", "1")
    before = wait_until(store, enqueue(store, basic.async_whoami).id, finished)
    task = enqueue(store, basic.async_overruns, str(tmp_path))  # timeout 0.3 s, sleeps 60 s
    failed = wait_until(store, task.id, finished, timeout=30)
    assert failed.status is Status.FAILED and failed.error is not None
    assert failed.error.type == "TimeoutError"
    assert failed.duration is not None and failed.duration < 2.0
    cancelled = tmp_path / "cancelled"
    wait_for(cancelled.exists, "the coroutine's CancelledError")
    assert cancelled.read_text() == "CancelledError"
    after = wait_until(store, enqueue(store, basic.async_whoami).id, finished)
    assert after.status is Status.DONE, after.error
    assert after.result["thread"] == before.result["thread"]  # not replaced: free again
    assert store.task_get(task.id) == failed  # the cancelled execution wrote nothing


def test_the_process_pool_runs_async_tasks_in_its_children(store: Store, start) -> None:  # type: ignore[no-untyped-def]
    worker = start("--pool", "processes", "--concurrency", "1")
    runs = []
    for _ in range(2):  # the second on the same child, its loop reused
        done = wait_until(store, enqueue(store, basic.async_whoami).id, finished, timeout=30)
        assert done.status is Status.DONE, done.error
        assert (done.result["token"], done.result["attempt"]) == (done.lease_token, 1)
        runs.append(done.result["pid"])
    assert runs[0] == runs[1] != worker.pid
    added = wait_until(store, enqueue(store, basic.async_add, 4, 5).id, finished, timeout=30)
    assert (added.status, added.result) == (Status.DONE, 9)
