"""The thread pool of the worker: threads are reused, and an abandoned execution
(which no thread can stop) never costs the pool a slot. ``async def`` tasks run on
their thread's own event loop: results, failures and ``tenure.current()`` as on
the async pool, and an abandoned coroutine is cancelled, its thread kept."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Coroutine
from typing import Any

import pytest

import tenure
from tenure import Lease
from tenure.function import TaskFunction
from tenure.worker.executors import ThreadExecutor
from tenure.worker.loops import Cancellation, ThreadLoop
from tenure.worker.runner import Ending, Raised, Succeeded
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

    pool = ThreadExecutor(app.registry, slots=1)
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
    pool = ThreadExecutor(app.registry, slots=1)
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
    pool = ThreadExecutor(app.registry, slots=1)
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


# -- async def tasks -------------------------------------------------------------

Endings = queue.Queue[tuple[str, Ending]]
started = threading.Event()
cancelled = threading.Event()
unwound = threading.Event()
seen: list[tuple[threading.Thread, asyncio.AbstractEventLoop]] = []  # who ran each coroutine


def saw() -> None:
    seen.append((threading.current_thread(), asyncio.get_running_loop()))


@app.task(topic="pool")
async def async_current() -> dict[str, Any]:
    await asyncio.sleep(0)
    saw()
    current = tenure.current()
    return {"task": current.task.id, "token": current.fencing_token, "thread": seen[-1][0].name}


@app.task(topic="pool")
async def async_fails() -> None:
    await asyncio.sleep(0)
    raise ValueError("failed in a coroutine")


@app.task(topic="pool")
async def async_waits() -> str:
    saw()
    started.set()
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        cancelled.set()
        raise
    finally:
        unwound.set()
    return "late"


@app.task(topic="pool")
async def async_blocks() -> str:
    """Blocks its own loop (a sync wait in a coroutine): no cancellation reaches it."""
    saw()
    running.set()
    release.wait(30)
    return "released"


async def helper() -> int:
    return 1


@app.task(topic="pool")
def returns_coroutine() -> Coroutine[Any, Any, int]:
    return helper()


@pytest.fixture
def endings() -> Endings:
    for event in (started, cancelled, unwound, running, release):
        event.clear()
    seen.clear()
    return queue.Queue()


def submit(
    pool: ThreadExecutor, endings: Endings, function: TaskFunction[Any, Any], task_id: str
) -> None:
    pool.submit(
        running_task(function, task_id),
        Lease(task_id, "w", 7),
        lambda *ending: endings.put(ending),
        claim,
    )


def ending_of(pool: ThreadExecutor, endings: Endings, function: TaskFunction[Any, Any]) -> Ending:
    submit(pool, endings, function, function.name)
    task_id, ending = endings.get(timeout=10)
    assert task_id == function.name
    return ending


def test_an_async_task_returns_its_result_and_sees_its_current_task(endings: Endings) -> None:
    pool = ThreadExecutor(app.registry, slots=1)
    ending = ending_of(pool, endings, async_current)
    pool.close()
    assert isinstance(ending, Succeeded)
    assert ending.result["task"] == async_current.name and ending.result["token"] == 7
    assert ending.result["thread"].startswith("tenure-task-")


def test_an_async_task_that_raises_fails_with_its_traceback(endings: Endings) -> None:
    pool = ThreadExecutor(app.registry, slots=1)
    ending = ending_of(pool, endings, async_fails)
    pool.close()
    assert isinstance(ending, Raised) and not ending.final
    assert (ending.error.type, ending.error.message) == ("ValueError", "failed in a coroutine")
    assert "Traceback" in ending.error.traceback and "async_fails" in ending.error.traceback


def test_abandoning_an_async_execution_cancels_it_and_its_thread_serves_on(
    endings: Endings,
) -> None:
    pool = ThreadExecutor(app.registry, slots=1, cancel_grace=60)  # never taken for stuck here
    submit(pool, endings, async_waits, "waits")
    assert started.wait(10)
    pool.abandon("waits")  # e.g. its timeout passed
    assert cancelled.wait(10) and unwound.wait(10)
    ending = ending_of(pool, endings, async_current)  # the only thread is free again
    assert isinstance(ending, Succeeded)
    pool.close()
    assert seen[0][0] is seen[1][0]  # the same thread, not a replacement
    assert endings.empty()  # a cancelled execution has no ending to deliver


def test_a_coroutine_that_blocks_its_loop_gets_its_thread_replaced(endings: Endings) -> None:
    pool = ThreadExecutor(app.registry, slots=1, cancel_grace=0.05)
    submit(pool, endings, async_blocks, "stuck")
    assert running.wait(10)
    pool.abandon("stuck")  # cancelled, but its loop is blocked: after the grace...
    ending = ending_of(pool, endings, async_current)  # ... a new thread serves
    assert isinstance(ending, Succeeded)
    (stuck, stuck_loop), (fresh, _) = seen
    assert fresh is not stuck
    release.set()
    assert endings.get(timeout=10)[0] == "stuck"  # the worker, not the pool, ignores it
    stuck.join(10)  # replaced, the stuck thread ends once its coroutine does...
    assert not stuck.is_alive() and stuck_loop.is_closed()  # ... closing its loop
    pool.close()


def test_a_thread_keeps_one_loop_until_the_pool_closes(endings: Endings) -> None:
    pool = ThreadExecutor(app.registry, slots=1)
    for _ in range(2):
        assert isinstance(ending_of(pool, endings, async_current), Succeeded)
    (thread, loop), (again, same) = seen
    assert (again, same) == (thread, loop) and not loop.is_closed()
    pool.close()
    assert not thread.is_alive() and loop.is_closed()


def test_a_sync_function_that_returns_a_coroutine_is_refused(endings: Endings) -> None:
    pool = ThreadExecutor(app.registry, slots=1)
    ending = ending_of(pool, endings, returns_coroutine)
    pool.close()
    assert isinstance(ending, Raised) and ending.final
    assert ending.error.type == "InvalidResult"
    assert "is not async def but returned a coroutine" in ending.error.message


def test_a_coroutine_cancelled_before_it_starts_never_runs() -> None:
    loop, cancellation, ran = ThreadLoop(), Cancellation(), []

    async def body() -> None:
        ran.append(True)

    cancellation.cancel()
    with pytest.raises(asyncio.CancelledError):
        loop.run(body(), cancellation)
    loop.close()
    assert ran == []


def test_tasks_a_coroutine_leaves_behind_are_cancelled_when_it_ends() -> None:
    loop, ended = ThreadLoop(), []

    async def left_behind() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise

    async def body() -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(left_behind())

    orphan = loop.run(body())
    assert orphan.cancelled() and ended == ["cancelled"]  # not frozen until the next task
    loop.close()
