"""Waiting on a task's handle, on each store: ``handle.wait()``, and for async
code ``await handle`` and ``await handle.wait_async(timeout)``. Where the store
tells of new events (PostgreSQL's LISTEN, SQLite's change counter) the ending
of the task wakes the wait; the tests make the polls so rare (30 s) that only
that wake-up can end a wait within its 10 s timeout.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import tenure
from tenure import Lease
from tenure.errors import TaskFailed
from tenure.retry import Backoff
from tenure.store import ReserveParams
from tenure.store.types import WorkerInfo
from tenure.task import TaskError

RARE_POLLS = Backoff(base=30.0, maximum=30.0, jitter=0.0)


@pytest.fixture
def app(store_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tenure.App]:
    monkeypatch.setattr("tenure.handle._POLLS", RARE_POLLS)
    made = tenure.App(store_url)

    @made.task(name="job", topic="waited")
    def job() -> None: ...

    yield made
    made.close()


def finish_once_waited_on(app: tenure.App, outcome: str) -> threading.Thread:
    """End the one pending task once someone subscribes to the store's events
    (the wait has read the task, found it pending, and is about to sleep)."""
    subscribed = threading.Event()
    notify = app.store.event_notify

    def noting(wake: threading.Event) -> Any:
        try:
            return notify(wake)
        finally:
            subscribed.set()

    app.store.event_notify = noting  # type: ignore[method-assign]

    def work() -> None:
        assert subscribed.wait(10), "nobody waited"
        [held] = app.store.task_reserve(ReserveParams(owner="w", lease_seconds=30))
        lease = Lease(held.id, "w", held.lease_token or 0)
        if outcome == "done":
            app.store.task_complete(lease, {"answer": 42})
        else:
            app.store.task_fail(lease, TaskError("ValueError", "bad"))

    thread = threading.Thread(target=work)
    thread.start()
    return thread


def test_the_ending_wakes_a_wait(app: tenure.App) -> None:
    handle = app.enqueue("job")
    thread = finish_once_waited_on(app, "done")
    assert handle.wait(timeout=10) == {"answer": 42}
    thread.join()


def test_the_ending_wakes_an_awaited_handle(app: tenure.App) -> None:
    first, second = app.enqueue("job"), app.enqueue("job")

    async def both() -> tuple[Any, Any]:
        thread = finish_once_waited_on(app, "done")
        one = await first  # no timeout: the handle is awaitable
        await asyncio.to_thread(thread.join)
        thread = finish_once_waited_on(app, "failed")
        with pytest.raises(TaskFailed, match="ValueError: bad"):
            await second.wait_async(timeout=10)
        await asyncio.to_thread(thread.join)
        return one, await first.wait_async(timeout=1)  # ended: answered at once

    assert asyncio.run(both()) == ({"answer": 42}, {"answer": 42})


def test_a_wait_that_times_out_says_whether_a_worker_serves_the_topic(
    app: tenure.App, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tenure.handle._POLLS", Backoff(base=0.01, maximum=0.05, jitter=0.0))
    handle = app.enqueue("job")
    with pytest.raises(TimeoutError, match="still pending") as raised:
        asyncio.run(handle.wait_async(timeout=0.2))
    assert "no live worker serves topic 'waited'; start one with `tenure worker" in str(
        raised.value
    )
    app.store.worker_beat(WorkerInfo(id="w-1", host="h", pid=1, topics=("other",)))
    app.store.worker_beat(WorkerInfo(id="w-2", host="h", pid=2, topics=("other", "waited")))
    with pytest.raises(TimeoutError, match=r"\(1 live worker serves topic 'waited'\)"):
        handle.wait(timeout=0.1)
