"""``@app.task``: a Python function made into a task that can be enqueued.

A :class:`TaskFunction` keeps the function callable as before and adds
``enqueue`` / ``enqueue_many`` / ``aenqueue`` and ``options(...)``. Arguments are
checked against the function's signature and encoded as JSON at enqueue time, so a
call that could never run is refused before anything is stored. Only the arguments
the caller passed are stored; defaults are applied when the task runs.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, Protocol, TypeVar

from tenure.checks import seconds as check_seconds
from tenure.errors import InvalidInput, UniqueConflict
from tenure.handle import TaskHandle
from tenure.hooks import Middleware, task_headers
from tenure.ids import new_id
from tenure.retry import Backoff
from tenure.store.types import NewTask
from tenure.task import OnConflict, UniqueRule
from tenure.unique import Unique, lock_key

if TYPE_CHECKING:
    from tenure.store import Store


class Enqueuer(Protocol):
    """What a task function needs of its App to enqueue: the store to write to, the
    unique locks' default lifetime, and the middleware that sees each enqueue."""

    @property
    def store(self) -> Store: ...

    @property
    def unique_ttl(self) -> float: ...

    @property
    def middleware(self) -> list[Middleware]: ...


P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class TaskConfig:
    """How a task is declared: where it goes and how it is retried."""

    name: str
    topic: str = "default"
    sub_topic: str = "default"
    retries: int = 0
    timeout: float | None = None
    priority: int = 0
    tags: frozenset[str] = frozenset()
    backoff: Backoff = field(default_factory=Backoff)
    unique: Unique | None = None

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise InvalidInput("retries", f"must be a whole number, zero or more: {self.retries!r}")
        if self.timeout is not None:
            check_seconds(self.timeout, "timeout")
        if self.unique is not None and not isinstance(self.unique, Unique):
            raise InvalidInput("unique", "must be a tenure.Unique")


@dataclass(frozen=True, slots=True)
class EnqueueOptions:
    """Per-enqueue choices that override the declaration (``.options(...)``)."""

    delay: float | None = None
    run_at: datetime | None = None
    priority: int | None = None
    group_id: str | None = None
    sub_topic: str | None = None
    description: str | None = None
    id: str | None = None
    topic: str | None = None
    connection: Any = None
    """A driver connection of the caller's: the task is written in its open
    transaction and exists if and only if the caller commits."""


CallArgs = tuple[Any, ...] | Mapping[str, Any]


class TaskFunction(Generic[P, R]):
    """A registered task: call it to run it here, enqueue it to run on a worker."""

    def __init__(
        self,
        app: Enqueuer,
        fn: Callable[P, R],
        config: TaskConfig,
        options: EnqueueOptions | None = None,
    ) -> None:
        self.app = app
        self.fn = fn
        self.config = config
        self._options = options or EnqueueOptions()
        self._signature = inspect.signature(fn)
        self.is_async = inspect.iscoroutinefunction(fn)
        """Declared ``async def``: workers run it on an event loop. (Known from
        the declaration: replace a task's function by declaring it anew.)"""
        self.__doc__ = fn.__doc__
        self.__name__ = getattr(fn, "__name__", config.name)
        self.__wrapped__ = fn

    @property
    def name(self) -> str:
        return self.config.name

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<TaskFunction {self.name!r} topic={self.config.topic!r}>"

    def options(self, **overrides: Any) -> TaskFunction[P, R]:
        """A copy that enqueues with ``overrides`` (delay, run_at, priority,
        group_id, sub_topic, description, id, topic, connection)."""
        try:
            options = replace(self._options, **overrides)
        except TypeError:
            known = ", ".join(EnqueueOptions.__dataclass_fields__)
            raise InvalidInput("options", f"unknown option; expected one of {known}") from None
        return TaskFunction(self.app, self.fn, self.config, options)

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> TaskHandle[R]:
        """Store one task that runs ``fn(*args, **kwargs)`` on a worker."""
        [handle] = self._create([self.new_task(args, kwargs)])
        return handle

    async def aenqueue(self, *args: P.args, **kwargs: P.kwargs) -> TaskHandle[R]:
        """:meth:`enqueue` from async code, without blocking the event loop."""
        task = self.new_task(args, kwargs)
        [handle] = await asyncio.to_thread(self._create, [task])
        return handle

    def enqueue_many(self, calls: Iterable[CallArgs]) -> list[TaskHandle[R]]:
        """Store many tasks in one round trip: each item is a tuple of positional
        arguments or a dict of keyword arguments."""
        tasks = []
        for index, call in enumerate(calls):
            if isinstance(call, Mapping):
                tasks.append(self.new_task((), call, index))
            elif isinstance(call, tuple):
                tasks.append(self.new_task(call, {}, index))
            else:
                raise InvalidInput(f"calls[{index}]", "must be a tuple of args or a dict of kwargs")
        return self._create(tasks)

    def new_task(
        self, args: Sequence[Any], kwargs: Mapping[str, Any], index: int | None = None
    ) -> NewTask:
        """The task that would be stored for this call (arguments checked)."""
        where = "args" if index is None else f"calls[{index}]"
        try:
            self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise InvalidInput(where, f"do not fit {self.name}{self._signature}: {exc}") from None
        config, opts = self.config, self._options
        return NewTask(
            topic=opts.topic or config.topic,
            name=config.name,
            data={"args": list(args), "kwargs": dict(kwargs)},
            # Chosen here, so that a refused unique task still has an id to report.
            id=opts.id or new_id(),
            sub_topic=opts.sub_topic or config.sub_topic,
            group_id=opts.group_id,
            description=opts.description,
            priority=config.priority if opts.priority is None else opts.priority,
            max_attempts=config.retries + 1,
            tags=config.tags,
            timeout=config.timeout,
            run_at=opts.run_at,
            delay=opts.delay,
            unique=self._unique_rule(args, kwargs),
        )

    def _unique_rule(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> UniqueRule | None:
        unique = self.config.unique
        if unique is None:
            return None
        key = lock_key(self.name, unique.values(self._signature, args, kwargs))
        return unique.rule(key, self.app.unique_ttl)

    def _create(self, tasks: list[NewTask]) -> list[TaskHandle[R]]:
        """Store ``tasks``; a conflicting unique task is rejected (a handle that
        says so) or raises ``UniqueConflict``, as its rule says."""
        tasks = [self.prepared(task) for task in tasks]
        rejected: dict[int, UniqueConflict] = {}
        while True:
            kept = [i for i in range(len(tasks)) if i not in rejected]
            try:
                created = self.app.store.task_create_many(
                    [tasks[i] for i in kept], connection=self._options.connection
                )
                break
            except UniqueConflict as conflict:
                # The batch wrote nothing: drop the rejected items and write the rest.
                rejected.update(self._rejections(conflict, kept, tasks))
        handles: list[TaskHandle[R]] = [
            TaskHandle(self.app.store, task.id, task) for task in created
        ]
        for index, refusal in sorted(rejected.items()):
            handles.insert(
                index, TaskHandle(self.app.store, tasks[index].id or "", rejected=refusal)
            )
        return handles

    def prepared(self, task: NewTask) -> NewTask:
        """``task`` as an enqueue stores it: with the headers the App's middleware
        adds. (Only enqueues call the middleware: building a task to check it, as
        ``new_task`` does, enqueues nothing.)"""
        if not self.app.middleware:
            return task
        headers = task_headers(self.app.middleware, task.name)
        if not headers or not isinstance(task.data, dict):
            return task
        return replace(task, data={**task.data, "headers": headers})

    @staticmethod
    def _rejections(
        conflict: UniqueConflict, kept: list[int], tasks: list[NewTask]
    ) -> dict[int, UniqueConflict]:
        """The items of ``conflict`` to reject; re-raises it if any says raise."""
        found: dict[int, UniqueConflict] = {}
        for position, key, holder in conflict.conflicts:
            index = kept[position]
            rule = tasks[index].unique
            if rule is None or rule.on_conflict is not OnConflict.REJECT:
                raise UniqueConflict(key, holder) from None
            found[index] = UniqueConflict(key, holder)
        return found
