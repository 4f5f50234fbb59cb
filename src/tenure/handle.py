"""A handle on an enqueued task: its id, its latest state, and a way to wait for it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Generic, TypeVar, cast

from tenure.errors import TaskCancelled, TaskFailed, TaskNotFound, UniqueConflict
from tenure.retry import Backoff
from tenure.task import Status, Task

if TYPE_CHECKING:
    from tenure.store import Store

R = TypeVar("R")

_POLLS = Backoff(base=0.005, maximum=0.25, jitter=0.0)
"""How often :meth:`TaskHandle.wait` looks: at once after 5 ms, then less
often, every 0.25 s at most."""


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
        if it ends otherwise, ``TimeoutError`` if ``timeout`` seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pauses = _POLLS.delays()
        pause = next(pauses)
        while True:
            task = self.refresh()
            if task.status is Status.DONE:
                return cast(R, task.result)
            if task.status is Status.FAILED:
                raise TaskFailed(task)
            if task.status is Status.CANCELLED:
                raise TaskCancelled(task)
            if deadline is not None and time.monotonic() + pause > deadline:
                raise TimeoutError(f"task {self.id} is still {task.status} after {timeout}s")
            time.sleep(pause)
            pause = next(pauses)

    def result(self) -> R | None:
        """The stored result, without waiting (``None`` until done)."""
        return cast("R | None", self.refresh().result)
