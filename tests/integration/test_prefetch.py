"""Prefetch: a worker reserves tasks beyond those it runs. They wait their turn
under a kept-alive lease; their timeout starts when they start; a stopping worker
hands them back at once."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenure import Status, Store
from tests.apps import basic
from tests.integration.workers import WorkerProcess, enqueue, finished, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def workers() -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for worker in started:
        worker.stop()


def test_a_waiting_task_is_reserved_and_its_timeout_starts_when_it_runs(
    store: Store, store_url: str, workers: list[WorkerProcess]
) -> None:
    # One slot, one prefetched: the second waits 0.6 s, then runs 0.6 s. Counted
    # from its reservation it would pass its 1 s timeout; counted from its start
    # it does not.
    first, second = (enqueue(store, basic.naps, 0.6) for _ in range(2))
    workers.append(WorkerProcess(store_url, "--concurrency", "1", "--prefetch", "1"))
    wait_until(store, first.id, lambda t: t.status is Status.RUNNING)
    waiting = wait_until(store, second.id, lambda t: t.status is Status.RUNNING)
    assert waiting.started_at is not None
    for task in (first, second):
        done = wait_until(store, task.id, finished)
        assert (done.status, done.result) == (Status.DONE, "rested")


def test_sigterm_hands_waiting_tasks_back_at_once(
    store: Store, store_url: str, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    gate, began = tmp_path / "gate", tmp_path / "began"
    running = enqueue(store, basic.blocks, str(gate), "finished in grace", str(began))
    waiting = [enqueue(store, basic.add, i, i) for i in range(2)]
    worker = WorkerProcess(store_url, "--concurrency", "1", "--prefetch", "2", "--grace", "60")
    workers.append(worker)
    for task in (running, *waiting):
        wait_until(store, task.id, lambda t: t.status is Status.RUNNING)
    basic.wait_for_file(str(began), limit=30)  # running, not only reserved
    assert began.exists()
    worker.signal(signal.SIGTERM)
    # Handed back while the running task still runs (its gate is shut).
    for task in waiting:
        back = wait_until(store, task.id, lambda t: t.status is Status.PENDING)
        assert back.attempts == 0 and back.lease_owner is None
    current = store.task_get(running.id)
    assert current is not None and current.status is Status.RUNNING
    gate.touch()
    assert worker.wait_exit() == 0
    done = store.task_get(running.id)
    assert done is not None and (done.status, done.result) == (Status.DONE, "finished in grace")
    events = [e for e in store.event_list(limit=1000) if e.task_id == waiting[0].id]
    assert [(e.from_status, e.to_status) for e in events][-1] == (Status.RUNNING, Status.PENDING)
