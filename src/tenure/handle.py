"""A handle on an enqueued task: its id, its latest state, and a way to wait for it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from tenure.errors import TaskCancelled, TaskFailed, TaskNotFound, TenureError, UniqueConflict
from tenure.retry import Backoff
from tenure.store.waking import LoopWake, registered_async
from tenure.task import Status, Task

if TYPE_CHECKING:
    from tenure.store import Store

R = TypeVar("R")

MIN_GAP = 0.05
"""Seconds between two reads of the task at least, while waiting: a busy store
appends events all the time, and each may wake the wait."""
_POLLS = Backoff(base=0.005, maximum=0.25, jitter=0.0)
"""How often a wait looks where the store cannot tell of news: at once after
5 ms, then less often, every 0.25 s at most."""


class TaskHandle(Generic[R]):
    """What ``enqueue`` returns."""

    def __init__(
        self,
        store: Store,
        task_id: str,
        task: Task | None = None,
        *,
        rejected: UniqueConflict | None = None,
    ) -> None:
        self.store = store
        self.id = task_id
        self.task = task
        self.rejected = rejected
        """Why no task was created: its unique lock was held and the rule says
        reject (``rejected.holder`` names the task that holds it)."""

    def __repr__(self) -> str:
        if self.rejected is not None:
            return f"<TaskHandle {self.id} rejected: lock held by {self.rejected.holder}>"
        status = "?" if self.task is None else self.task.status
        return f"<TaskHandle {self.id} {status}>"

    @property
    def status(self) -> Status | None:
        """The status when last read (``refresh()`` reads again)."""
        return None if self.task is None else self.task.status

    def refresh(self) -> Task:
        """Read the task again from the store (a rejected one raises its
        ``UniqueConflict``: it was never created)."""
        if self.rejected is not None:
            raise self.rejected
        task = self.store.task_get(self.id)
        if task is None:
            raise TaskNotFound(self.id)
        self.task = task
        return task

    def wait(self, timeout: float | None = None) -> R:
        """The task's result once done; raises ``TaskFailed`` or ``TaskCancelled``
        if it ends otherwise, ``TimeoutError`` if ``timeout`` seconds pass first.

        The task is read again after pauses that grow from 5 ms to 0.25 s, and
        sooner where the store tells of new events (PostgreSQL's LISTEN,
        SQLite's change counter) as soon as one may be its ending, though not
        more often than every :data:`MIN_GAP` seconds (a busy store appends
        events all the time)."""
        waiting = _Waiting(self.store, self.id, timeout)
        task = self.refresh()  # ended already: no need to be told of news
        if waiting.pause(task) is None:
            return cast(R, task.result)
        wake = threading.Event()
        unsubscribe = self.store.event_notify(wake)
        try:
            while True:
                wake.clear()  # before the read: an ending after it wakes the wait
                task = self.refresh()
                pause = waiting.pause(task)
                if pause is None:
                    return cast(R, task.result)
                if wake.wait(pause):
                    time.sleep(waiting.gap())
        finally:
            unsubscribe()

    async def wait_async(self, timeout: float | None = None) -> R:
        """:meth:`wait` for async code (``await handle`` is the same, with no
        timeout): reads run on the default executor, and the waits are the
        event loop's own, so a thousand waiting handles hold no thread."""
        waiting = _Waiting(self.store, self.id, timeout)
        task = await asyncio.to_thread(self.refresh)
        if waiting.pause(task) is None:
            return cast(R, task.result)
        wake = LoopWake(asyncio.get_running_loop())
        unsubscribe = await registered_async(self.store.event_notify, wake)
        try:
            while True:
                wake.clear()
                task = await asyncio.to_thread(self.refresh)
                pause = waiting.pause(task)
                if pause is None:
                    return cast(R, task.result)
                await wake.wait_async(pause)
                if wake.is_set():
                    await asyncio.sleep(waiting.gap())
        finally:
            await asyncio.to_thread(unsubscribe)

    def __await__(self) -> Generator[Any, None, R]:
        return self.wait_async().__await__()

    def result(self) -> R | None:
        """The stored result, without waiting (``None`` until done)."""
        return cast("R | None", self.refresh().result)


class _Waiting:
    """One wait for a task: its deadline, and the pause before each next read."""

    def __init__(self, store: Store, task_id: str, timeout: float | None) -> None:
        self.store = store
        self.task_id = task_id
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self._pauses = _POLLS.delays()
        self._read_at = 0.0

    def pause(self, task: Task) -> float | None:
        """``None`` if ``task`` is done; else the seconds to wait before reading
        it again (until the deadline at most). Raises ``TaskFailed`` or
        ``TaskCancelled`` if it ended so, and ``TimeoutError`` once the
        deadline has passed."""
        self._read_at = time.monotonic()
        if task.status is Status.DONE:
            return None
        if task.status is Status.FAILED:
            raise TaskFailed(task)
        if task.status is Status.CANCELLED:
            raise TaskCancelled(task)
        pause = next(self._pauses)
        if self.deadline is None:
            return pause
        left = self.deadline - self._read_at
        if left <= 0:
            raise TimeoutError(self.timed_out(task))
        return min(pause, left)  # a last read at the deadline

    def timed_out(self, task: Task) -> str:
        """Why the wait ended: the task's status and, for one still pending,
        whether any live worker serves its topic (the first thing to check)."""
        said = f"task {self.task_id} is still {task.status} after {self.timeout}s"
        if task.status is not Status.PENDING:
            return said
        try:
            workers = self.store.worker_list()
        except TenureError:  # the store was reachable a moment ago: say what is known
            return said
        serving = [w for w in workers if task.topic in w.topics]
        if not serving:
            return (
                f"{said}: no live worker serves topic {task.topic!r}; start one with "
                "`tenure worker --app module:app`"
            )
        count = f"{len(serving)} live worker{'s' if len(serving) != 1 else ''}"
        return f"{said} ({count} serve{'s' if len(serving) == 1 else ''} topic {task.topic!r})"

    def gap(self) -> float:
        """What is left of :data:`MIN_GAP` since the last read."""
        return max(0.0, self._read_at + MIN_GAP - time.monotonic())
