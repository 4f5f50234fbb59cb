"""Handles on an enqueued workflow: a group's members and callback, a chain's
tasks stage by stage, and a way to wait for what they end with."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from tenure.errors import ChainStopped, TaskCancelled, TaskFailed
from tenure.handle import TaskHandle
from tenure.task import Ended, Status, Task

if TYPE_CHECKING:
    from tenure.store import Store


class GroupHandle:
    """What enqueuing a group returns: a handle on each member and on the
    callback (``None`` without ``on_complete``)."""

    def __init__(
        self, store: Store, group_id: str, members: list[Task], callback: Task | None
    ) -> None:
        self.store = store
        self.group_id = group_id
        """What its tasks are listed under (``app.tasks.group(group_id)``)."""
        self.members = [TaskHandle[Any](store, task.id, task) for task in members]
        self.callback = None if callback is None else TaskHandle[Any](store, callback.id, callback)

    def __repr__(self) -> str:
        return f"<GroupHandle {self.group_id} of {len(self.members)}>"

    def wait(self, timeout: float | None = None) -> list[Ended]:
        """How every member ended, in their order, once all have ended (done,
        failed or cancelled); ``TimeoutError`` if ``timeout`` seconds pass first."""
        deadline = _deadline(timeout)
        for member in self.members:
            _wait_for_end(member, _left(deadline))
        return [_ended(member) for member in self.members]

    async def wait_async(self, timeout: float | None = None) -> list[Ended]:
        """:meth:`wait` for async code (``await handle`` is the same, with no timeout)."""
        deadline = _deadline(timeout)
        for member in self.members:
            with contextlib.suppress(TaskFailed, TaskCancelled):  # ended all the same
                await member.wait_async(_left(deadline))
        return [_ended(member) for member in self.members]

    def __await__(self) -> Any:
        return self.wait_async().__await__()


class ChainHandle:
    """What enqueuing a chain returns: its tasks stage by stage, and the tasks
    whose results it ends with (the last stage's task, its group's members, or
    that group's callback)."""

    def __init__(
        self,
        store: Store,
        group_id: str,
        stages: list[list[Task]],
        last: list[Task],
        *,
        many: bool = False,
    ) -> None:
        self.store = store
        self._many = many  # it ends with a group without callback: a list of results
        self.group_id = group_id
        """What its tasks are listed under (``app.tasks.group(group_id)``)."""
        self.stages = [[TaskHandle[Any](store, t.id, t) for t in stage] for stage in stages]
        by_id = {handle.id: handle for stage in self.stages for handle in stage}
        self._last = [by_id[task.id] for task in last]

    def __repr__(self) -> str:
        return f"<ChainHandle {self.group_id} of {len(self.stages)} stages>"

    @property
    def tasks(self) -> list[TaskHandle[Any]]:
        """Every task of the chain, in order."""
        return [handle for stage in self.stages for handle in stage]

    def wait(self, timeout: float | None = None) -> Any:
        """What the chain ends with: the last task's result (a list of results
        when it ends with a group without callback). ``ChainStopped`` names the
        task where it stopped if one failed or was cancelled."""
        deadline = _deadline(timeout)
        try:
            results = [handle.wait(_left(deadline)) for handle in self._last]
        except (TaskFailed, TaskCancelled) as ended:
            raise self._stopped_error(ended) from ended
        return results if self._many else results[0]

    async def wait_async(self, timeout: float | None = None) -> Any:
        """:meth:`wait` for async code (``await handle`` is the same, with no timeout)."""
        deadline = _deadline(timeout)
        try:
            results = [await handle.wait_async(_left(deadline)) for handle in self._last]
        except (TaskFailed, TaskCancelled) as ended:
            stopped = await asyncio.to_thread(self._stopped_error, ended)
            raise stopped from ended
        return results if self._many else results[0]

    def __await__(self) -> Any:
        return self.wait_async().__await__()

    def stopped(self) -> Task | None:
        """The task where the chain stopped (the first, in order, that failed
        or was cancelled other than for a task before it), or ``None``."""
        for handle in self.tasks:
            task = handle.refresh()
            if task.status in (Status.FAILED, Status.CANCELLED) and not _by_upstream(task):
                return task
        return None

    def _stopped_error(self, ended: TaskFailed | TaskCancelled) -> ChainStopped:
        return ChainStopped(self.stopped() or ended.task)


def _by_upstream(task: Task) -> bool:
    return task.error is not None and task.error.type == "UpstreamFailed"


def _wait_for_end(handle: TaskHandle[Any], timeout: float | None) -> None:
    with contextlib.suppress(TaskFailed, TaskCancelled):  # ended all the same
        handle.wait(timeout)


def _ended(handle: TaskHandle[Any]) -> Ended:
    task = handle.task if handle.task is not None else handle.refresh()
    return Ended(task.id, task.status, task.result, task.error)


def _deadline(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + timeout


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())
