"""Lifecycle hooks and execution middleware: where error trackers, tracing and
metrics plug into tenure without patching it.

- **Hooks** (``@app.on("failed")``) are called in the worker process once a
  task's fate is known: ``started`` when its execution begins, ``succeeded`` /
  ``retrying`` / ``failed`` / ``snoozed`` once the store accepted the ending,
  ``cancelled`` when the worker learns the task was cancelled while it held it.
  A hook gets an :class:`Outcome`. Hooks run on the worker's own threads: keep
  them quick, and a hook that raises is logged and ignored, never fatal.
- **Middleware** (``app.add_middleware(...)``) wraps both ends of a task:
  :meth:`Middleware.enqueue` sees each task as it is built and may add string
  headers that travel with it (trace context, a request id); and
  :meth:`Middleware.execute` is a context manager entered around each execution
  where the function runs (a worker thread, the event loop, a pool child), so it
  sees the exception the function raised, with its traceback, as it happens.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Literal, get_args

from tenure.errors import ConfigError, InvalidInput
from tenure.task import Task, TaskError

log = logging.getLogger("tenure.hooks")

HookKind = Literal["started", "succeeded", "retrying", "failed", "snoozed", "cancelled"]
HOOK_KINDS: tuple[str, ...] = get_args(HookKind)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a hook is told: the task as the worker held it, and what became of it.

    ``error`` is set for ``retrying`` and ``failed``, and for a ``snoozed`` task
    the worker gave back because it does not know its name (an ``UnknownTask``
    error: an older worker during a rolling deploy); ``result`` for
    ``succeeded``; ``delay`` is the seconds until the next attempt (``retrying``)
    or the wake-up (``snoozed``); ``duration`` the seconds since the execution
    began (``None`` for ``started``)."""

    kind: HookKind
    task: Task
    error: TaskError | None = None
    result: Any = None
    delay: float | None = None
    duration: float | None = None


Hook = Callable[[Outcome], object]


class Hooks:
    """The callbacks registered per kind, and the one place that calls them."""

    def __init__(self) -> None:
        self._hooks: dict[str, list[Hook]] = {kind: [] for kind in HOOK_KINDS}
        self._any = False

    def add(self, kind: str, hook: Hook) -> None:
        if kind not in self._hooks:
            raise ConfigError(f"unknown hook {kind!r}; choose from {', '.join(HOOK_KINDS)}")
        self._hooks[kind].append(hook)
        self._any = True

    def __bool__(self) -> bool:
        return self._any  # asked for every task: kept, not recounted

    def fire(self, outcome: Outcome) -> None:
        """Call each hook of ``outcome.kind``; one that raises is logged, not fatal."""
        for hook in self._hooks[outcome.kind]:
            try:
                hook(outcome)
            except (Exception, SystemExit):  # a hook never ends the thread that runs it
                log.exception(
                    "the %s hook %s raised (ignored)",
                    outcome.kind,
                    getattr(hook, "__qualname__", hook),
                    extra={"task_id": outcome.task.id, "task_name": outcome.task.name},
                )


class Middleware:
    """Subclass and override what you need; both methods do nothing by default."""

    def enqueue(self, name: str, headers: dict[str, str]) -> None:
        """Called as a task named ``name`` is built, before it is stored, in the
        enqueuing process. Add entries to ``headers`` (strings) to send them
        with the task; executions read them as :attr:`Current.headers`."""

    def execute(self, task: Task) -> AbstractContextManager[object]:
        """A context manager entered around the execution of ``task``; an
        exception raised by the function (``Retry`` and ``Snooze`` too) passes
        through its ``__exit__`` (one that suppresses it makes the attempt
        succeed with ``None``). Async functions run inside it as well."""
        return nullcontext()


def task_headers(
    middleware: list[Middleware], name: str, given: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The headers of a new task named ``name``: ``given`` (the enqueue's own),
    and what every middleware adds to them."""
    headers: dict[str, str] = dict(given or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise InvalidInput("headers", "must map strings to strings")
    for each in middleware:
        each.enqueue(name, headers)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise ConfigError("middleware headers must map strings to strings")
    return headers


_NOTHING = nullcontext()
"""Entered around executions when there is no middleware (reusable, and cheap on
the worker's hot path)."""


def executing(middleware: list[Middleware], task: Task) -> AbstractContextManager[object]:
    """Every middleware's ``execute`` context, the first added outermost."""
    return _stacked(middleware, task) if middleware else _NOTHING


@contextmanager
def _stacked(middleware: list[Middleware], task: Task) -> Iterator[None]:
    with ExitStack() as stack:
        for each in middleware:
            stack.enter_context(each.execute(task))
        yield
