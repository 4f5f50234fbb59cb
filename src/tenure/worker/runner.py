"""Runs one task's function and says how it ended; nothing here touches the store.

The same code runs in a worker thread, in the event loop of the async pool and in
the child processes of the process pool, so every pool reports endings alike.
Every pool runs ``async def`` functions: the async pool as tasks of its loop, the
others on the event loop of the thread that took the task (see ``loops``).
"""

from __future__ import annotations

import asyncio
import inspect
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tenure import serializer
from tenure.control import Cancel, Current, Link, Retry, Snooze, set_current
from tenure.errors import InvalidInput
from tenure.frozen import quick_init
from tenure.hooks import executing
from tenure.task import Lease, Task, TaskError, given
from tenure.worker.loops import Cancellation, ThreadLoop

if TYPE_CHECKING:
    from tenure.function import TaskFunction
    from tenure.registry import Registry


@quick_init
@dataclass(frozen=True, slots=True)
class Succeeded:
    result: Any
    encoded: serializer.JsonText | None = None
    """The result's JSON, as checked here: the store writes it without encoding
    the result again."""


@dataclass(frozen=True, slots=True)
class Raised:
    """The attempt failed. ``retry_in`` is an explicit delay asked for with
    ``Retry``; ``final`` means no retry can help (unknown task, bad result)."""

    error: TaskError
    retry_in: float | None = None
    final: bool = False


@dataclass(frozen=True, slots=True)
class Snoozed:
    """The task is paused for ``seconds``, no attempt spent. ``unknown`` is set when
    the worker gave back a task whose name it does not know (see ``unknown``)."""

    seconds: float
    unknown: TaskError | None = None


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The task raised ``tenure.Cancel``: it ends cancelled, never retried."""

    error: TaskError


@dataclass(frozen=True, slots=True)
class CompletedIn:
    """The task wrote its own ending, done with ``result``, in a transaction of
    its own (``tenure.current().complete_in``): done if that transaction
    committed, which the worker confirms; else the attempt failed."""

    result: Any


NOT_COMMITTED = TaskError(
    "NotCommitted",
    "the task wrote its ending with complete_in(), but that transaction did not commit",
)
"""Why an attempt fails whose own ending (``complete_in``) was rolled back."""

Ending = Succeeded | Raised | Snoozed | Cancelled | CompletedIn
Deliver = Callable[[str, Ending], None]
"""How an executor hands a task's ending (by its id) back to the worker."""
Claim = Callable[[str], bool]
"""Asked just before an execution begins; ``False`` means skip it (the task was
released or abandoned while it waited)."""


def error_of(exc: BaseException) -> TaskError:
    """An exception as the task's stored error."""
    trace = "".join(traceback.format_exception(exc))
    return TaskError(type(exc).__name__, str(exc), trace)


def resolve(registry: Registry, task: Task) -> TaskFunction[Any, Any] | Raised:
    """The registered function for ``task``, or why it cannot run here."""
    found = registry.get(task.name)
    if found is None:
        message = f"no task named {task.name!r} is registered in this worker"
        return Raised(TaskError("UnknownTask", message), final=True)
    if task.gate_in is not None and task.upstream is None:
        message = (
            f"it stood behind gate {task.gate_in}, which never opened (a task before it "
            "failed or was cancelled), so what those tasks returned is not known: enqueue "
            "the rest of the workflow anew"
        )
        return Raised(TaskError("UpstreamMissing", message), final=True)
    return found


def split_data(task: Task) -> tuple[list[Any], dict[str, Any]]:
    """The arguments to call ``task``'s function with: what its gate gave it
    (a flow's task), then its own."""
    data = task.data if isinstance(task.data, dict) else {}
    args = list(data.get("args", []))
    if task.upstream is not None:
        args.insert(0, given(task.upstream))
    return args, dict(data.get("kwargs", {}))


def is_coroutine_task(registry: Registry, task: Task) -> bool:
    """Whether ``task`` runs an ``async def`` function (one this worker knows)."""
    function = registry.get(task.name)
    return function is not None and function.is_async


def run_in_thread(
    registry: Registry,
    task: Task,
    lease: Lease,
    loop: ThreadLoop,
    *,
    cancellation: Cancellation | None = None,
    link: Link | None = None,
) -> Ending | None:
    """Run a task's function in this thread: a sync function directly, an
    ``async def`` function on ``loop``, this thread's event loop. ``None`` means
    ``cancellation`` cancelled the coroutine (its execution was abandoned).
    ``link`` is what ``tenure.current()`` stops by and reports through."""
    function = resolve(registry, task)
    if isinstance(function, Raised):
        return function
    if not function.is_async:
        return call_sync(registry, function, task, lease, link)
    try:
        return loop.run(run_async(registry, task, lease, link), cancellation)
    except asyncio.CancelledError as exc:
        if cancellation is not None and cancellation.requested:
            return None
        return Raised(error_of(exc))  # raised by the task's own code: a failure
    except KeyboardInterrupt as exc:  # Ctrl-C in a pool child, where the loop takes
        return ending_of_exception(exc)  # SIGINT: the attempt fails, as a sync one does


def run_sync(registry: Registry, task: Task, lease: Lease) -> Ending:
    """Run a task's sync function in this thread."""
    function = resolve(registry, task)
    if isinstance(function, Raised):
        return function
    return call_sync(registry, function, task, lease)


def call_sync(
    registry: Registry,
    function: TaskFunction[Any, Any],
    task: Task,
    lease: Lease,
    link: Link | None = None,
) -> Ending:
    """Call ``function`` for ``task`` in this thread, inside the middleware."""
    args, kwargs = split_data(task)
    link = link or Link()
    set_current(Current(task, lease, link))
    try:
        result: Any = None  # stays None if a middleware swallows the exception
        with executing(registry.middleware, task):
            result = function.fn(*args, **kwargs)
        return _own(link) or _checked(registry, result, awaited=False)
    except BaseException as exc:
        return ending_of_exception(exc, function.config.retry_on)
    finally:
        set_current(None)


async def run_async(
    registry: Registry, task: Task, lease: Lease, link: Link | None = None
) -> Ending:
    """Run a task's function in the running event loop (sync functions in a thread)."""
    function = resolve(registry, task)
    if isinstance(function, Raised):
        return function
    if not function.is_async:
        return await asyncio.to_thread(call_sync, registry, function, task, lease, link)
    args, kwargs = split_data(task)
    # The coroutine runs in its own copied context.
    link = link or Link()
    set_current(Current(task, lease, link))
    result: Any = None  # stays None if a middleware swallows the exception
    try:
        with executing(registry.middleware, task):
            result = await function.fn(*args, **kwargs)
        return _own(link) or _checked(registry, result, awaited=True)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        return ending_of_exception(exc, function.config.retry_on)


def ending_of_exception(
    exc: BaseException, retry_on: tuple[type[BaseException], ...] | None = None
) -> Ending:
    """How an exception out of a task ends its attempt. ``retry_on`` (the task's
    declaration) names the exceptions worth another attempt: any other fails the
    task at once (``None``: every exception may be retried). ``Retry`` is asked
    for explicitly, so it retries whatever ``retry_on`` says."""
    if isinstance(exc, Snooze):
        return Snoozed(exc.seconds)
    if isinstance(exc, Retry):
        return Raised(error_of(exc), retry_in=exc.in_)
    if isinstance(exc, Cancel):
        return Cancelled(TaskError("Cancel", exc.reason))
    final = retry_on is not None and not isinstance(exc, retry_on)
    return Raised(error_of(exc), final=final)


def _own(link: Link) -> CompletedIn | None:
    """The ending the task wrote itself, if it did (then what it returned is not
    stored)."""
    return CompletedIn(link.completed[0]) if link.completed else None


def _checked(registry: Registry, result: Any, *, awaited: bool) -> Ending:
    """A result the store will accept, or a final failure saying why not.
    ``awaited``: the result is what an ``async def`` function's coroutine returned."""
    if inspect.iscoroutine(result):
        result.close()
        return Raised(TaskError("InvalidResult", _coroutine_result(awaited)), final=True)
    try:
        if result is None:  # most tasks return nothing: its JSON is made once
            encoded = NOTHING
            serializer.check_size(NOTHING.size, "result", registry.max_payload_bytes)
        else:
            encoded = serializer.dumps(result, "result", registry.max_payload_bytes)
    except InvalidInput as exc:
        return Raised(TaskError("InvalidResult", str(exc)), final=True)
    return Succeeded(result, encoded)


NOTHING = serializer.dumps(None, "result")
"""The checked JSON of a task that returned ``None``."""


def _coroutine_result(awaited: bool) -> str:
    if awaited:
        return "the async def task returned a coroutine, not a value: await it in the task"
    return (
        "the task function is not async def but returned a coroutine, which tenure does "
        "not await (a sync wrapper or decorator hides the async def function it calls): "
        "make the registered function itself async def"
    )
