"""The thread pool of the worker: threads are reused, and an abandoned execution
(which no thread can stop) never costs the pool a slot."""

from __future__ import annotations

import queue
import threading

import tenure
from tenure import Lease
from tenure.worker.executors import ThreadExecutor
from tenure.worker.runner import Ending, Succeeded
from tests.executions import running_task

app = tenure.App("sqlite:///:memory:")
release = threading.Event()
running = threading.Event()


@app.task(topic="pool")
def blocks() -> str:
    running.set()
    release.wait(30)
    return "released"


@app.task(topic="pool")
def thread_name() -> str:
    return threading.current_thread().name + str(threading.get_ident())


def claim(task_id: str) -> bool:
    return task_id not in refused


refused: set[str] = set()


def test_abandoning_a_stuck_execution_gives_the_pool_a_new_thread() -> None:
    endings: queue.Queue[tuple[str, Ending]] = queue.Queue()

    def deliver(task_id: str, ending: Ending) -> None:
        endings.put((task_id, ending))

    pool = ThreadExecutor(app, slots=1)
    release.clear()
    running.clear()
    pool.submit(running_task(blocks, "stuck"), Lease("stuck", "w", 1), deliver, claim)
    assert running.wait(10)
    pool.abandon("stuck")  # e.g. its timeout passed: the thread runs on, unheard
    pool.submit(running_task(thread_name, "next"), Lease("next", "w", 1), deliver, claim)
    task_id, ending = endings.get(timeout=10)  # would hang if the only thread were stuck
    assert task_id == "next" and isinstance(ending, Succeeded)
    release.set()
    assert endings.get(timeout=10)[0] == "stuck"  # the worker, not the pool, ignores it


def test_threads_are_reused() -> None:
    endings: queue.Queue[tuple[str, Ending]] = queue.Queue()
    pool = ThreadExecutor(app, slots=1)
    for i in range(3):
        pool.submit(
            running_task(thread_name, f"t{i}"),
            Lease(f"t{i}", "w", 1),
            lambda *e: endings.put(e),
            claim,
        )
    names = set()
    for _ in range(3):
        _, ending = endings.get(timeout=10)
        assert isinstance(ending, Succeeded)
        names.add(ending.result)
    assert len(names) == 1


def test_a_task_whose_claim_fails_never_runs() -> None:
    endings: queue.Queue[tuple[str, Ending]] = queue.Queue()
    pool = ThreadExecutor(app, slots=1)
    refused.add("released")  # e.g. released at shutdown while it waited
    pool.submit(
        running_task(thread_name, "released"),
        Lease("released", "w", 1),
        lambda *e: endings.put(e),
        claim,
    )
    pool.submit(
        running_task(thread_name, "last"), Lease("last", "w", 1), lambda *e: endings.put(e), claim
    )
    assert endings.get(timeout=10)[0] == "last"  # "released" was skipped, never delivered
    assert endings.empty()
