"""Runs one task's function and says how it ended; nothing here touches the store.

The same code runs in a worker thread, in the event loop of the async pool and in
the child processes of the process pool, so every pool reports endings alike.
"""

from __future__ import annotations

import inspect
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tenure import serializer
from tenure.control import Current, Retry, Snooze, set_current
from tenure.errors import InvalidInput
from tenure.store.types import Lease
from tenure.task import Task, TaskError

if TYPE_CHECKING:
    from tenure.app import App
    from tenure.function import TaskFunction


@dataclass(frozen=True, slots=True)
class Succeeded:
    result: Any


@dataclass(frozen=True, slots=True)
class Raised:
    """The attempt failed. ``retry_in`` is an explicit delay asked for with
    ``Retry``; ``final`` means no retry can help (unknown task, bad result)."""

    error: TaskError
    retry_in: float | None = None
    final: bool = False


@dataclass(frozen=True, slots=True)
class Snoozed:
    seconds: float


Ending = Succeeded | Raised | Snoozed


def error_of(exc: BaseException) -> TaskError:
    """An exception as the task's stored error."""
    trace = "".join(traceback.format_exception(exc))
    return TaskError(type(exc).__name__, str(exc), trace)


def resolve(app: App, task: Task) -> TaskFunction[Any, Any] | Raised:
    """The registered function for ``task``, or why it cannot run here."""
    found = app.registry.get(task.name)
    if found is None:
        message = f"no task named {task.name!r} is registered in this worker"
        return Raised(TaskError("UnknownTask", message), final=True)
    return found


def split_data(task: Task) -> tuple[list[Any], dict[str, Any]]:
    data = task.data if isinstance(task.data, dict) else {}
    return list(data.get("args", [])), dict(data.get("kwargs", {}))


def run_sync(app: App, task: Task, lease: Lease) -> Ending:
    """Run a task's function in this thread."""
    function = resolve(app, task)
    if isinstance(function, Raised):
        return function
    args, kwargs = split_data(task)
    set_current(Current(task, lease))
    try:
        return _checked(app, function.fn(*args, **kwargs))
    except BaseException as exc:
        return ending_of_exception(exc)
    finally:
        set_current(None)


async def run_async(app: App, task: Task, lease: Lease) -> Ending:
    """Run a task's function in the running event loop (sync functions in a thread)."""
    import asyncio  # noqa: PLC0415 - only the async pool needs it

    function = resolve(app, task)
    if isinstance(function, Raised):
        return function
    if not inspect.iscoroutinefunction(function.fn):
        return await asyncio.to_thread(run_sync, app, task, lease)
    args, kwargs = split_data(task)
    set_current(Current(task, lease))  # the coroutine runs in its own copied context
    try:
        return _checked(app, await function.fn(*args, **kwargs))
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        return ending_of_exception(exc)


def ending_of_exception(exc: BaseException) -> Ending:
    if isinstance(exc, Snooze):
        return Snoozed(exc.seconds)
    if isinstance(exc, Retry):
        return Raised(error_of(exc), retry_in=exc.in_)
    return Raised(error_of(exc))


def _checked(app: App, result: Any) -> Ending:
    """A result the store will accept, or a final failure saying why not."""
    if inspect.iscoroutine(result):
        result.close()
        message = "the task returned a coroutine; declare it async def and use the async pool"
        return Raised(TaskError("InvalidResult", message), final=True)
    try:
        serializer.dumps(result, "result", app.max_payload_bytes)
    except InvalidInput as exc:
        return Raised(TaskError("InvalidResult", str(exc)), final=True)
    return Succeeded(result)
