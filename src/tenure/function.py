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
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import datetime
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    ParamSpec,
    Protocol,
    TypedDict,
    TypeVar,
    Unpack,
    overload,
)

from tenure.declaration import TaskConfig
from tenure.errors import InvalidInput, UniqueConflict
from tenure.handle import TaskHandle
from tenure.hooks import Middleware, task_headers
from tenure.ids import new_id
from tenure.limits import key_of
from tenure.store.types import NewTask
from tenure.task import OnConflict, Task, UniqueRule
from tenure.unique import lock_key
from tenure.workflows import Signature

if TYPE_CHECKING:
    from tenure.store import Store


ENQUEUE_CLOCK: ContextVar[tuple[object, Callable[[], datetime | None]] | None] = ContextVar(
    "tenure_enqueue_clock", default=None
)
"""A store and the clock to stamp the tasks enqueued to it in this context: set
while :func:`tenure.testing.run_until_empty` runs tasks on a clock moved ahead of
the store's, so that what they enqueue is timed on that same clock."""


class Enqueuer(Protocol):
    """What a task function needs of its App to enqueue: the store to write to, the
    unique locks' default lifetime, and the middleware that sees each enqueue."""

    @property
    def store(self) -> Store: ...

    @property
    def opened(self) -> bool:
        """Whether the store is open already (else its first use opens it)."""

    @property
    def unique_ttl(self) -> float: ...

    @property
    def middleware(self) -> list[Middleware]: ...

    @property
    def enqueue_connection(self) -> Callable[[], Any] | None:
        """Gives the connection an enqueue without ``connection=`` writes on, or
        ``None`` for the store's own (a framework's open transaction)."""

    @property
    def on_enqueued(self) -> Callable[[list[Task]], list[Task]] | None:
        """Called with the tasks each enqueue stored (not one written on the
        caller's connection), returning them as they are now (eager mode)."""


P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


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
    headers: Mapping[str, str] | None = None
    """Headers the task starts with (a caller's W3C trace context:
    ``traceparent``, ``tracestate``); the App's middleware adds to them."""
    meta: Mapping[str, str] | None = None
    """Names and values (text) stored with the task to find it by:
    ``{"customer": "c-42"}``, then ``tenure tasks --meta customer=c-42``."""
    expires: float | None = None
    """Seconds after enqueue by which it must start (the declaration's, if not given)."""


class Overrides(TypedDict, total=False):
    """The keyword arguments of :meth:`TaskFunction.options`; each is optional,
    and ``None`` goes back to what the declaration says."""

    delay: float | None
    run_at: datetime | None
    priority: int | None
    group_id: str | None
    sub_topic: str | None
    description: str | None
    id: str | None
    topic: str | None
    connection: Any
    headers: Mapping[str, str] | None
    meta: Mapping[str, str] | None
    expires: float | None


@dataclass(frozen=True, slots=True)
class Call(Generic[P, R]):
    """One call of a task, not run: what :meth:`TaskFunction.call` returns and
    :meth:`TaskFunction.enqueue_many` takes, typed by the task's signature."""

    task: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]


CallArgs = tuple[Any, ...] | Mapping[str, Any]
"""An untyped call for ``enqueue_many``: positional arguments or keyword arguments."""


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
        self._fits = _binder(self._signature)
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

    def options(self, **overrides: Unpack[Overrides]) -> TaskFunction[P, R]:
        """A copy that enqueues with ``overrides``: ``delay`` (seconds) or
        ``run_at``, ``priority``, ``group_id``, ``sub_topic``, ``description``,
        ``id``, ``topic``, ``connection`` (a driver connection of the caller's:
        the task is written in its open transaction), ``headers`` (what the
        task's headers start from, such as a caller's trace context), ``meta``
        (names and values to find the task by), ``expires`` (seconds after
        enqueue by which it must start, or never run)."""
        unknown = sorted(set(overrides) - set(Overrides.__annotations__))
        if unknown:
            known = ", ".join(Overrides.__annotations__)
            raise InvalidInput("options", f"unknown option {unknown[0]!r}; expected {known}")
        options = replace(self._options, **overrides)
        return TaskFunction(self.app, self.fn, self.config, options)

    def s(self, *args: Any, **kwargs: Any) -> Signature[R]:
        """This task with some of its arguments, for a workflow:
        ``add.s(1, 2).then(mul.s(10))``, ``app.group([...], on_complete=report.s())``.
        Checked when the workflow is enqueued, knowing what the task is given
        first by the tasks before it."""
        return Signature(self, args, kwargs)

    def call(self, *args: P.args, **kwargs: P.kwargs) -> Call[P, R]:
        """This task with these arguments, checked but not run nor stored: an
        item for :meth:`enqueue_many`."""
        self._bind(args, kwargs, "args")
        return Call(self.name, args, kwargs)

    @overload
    def enqueue(
        self: TaskFunction[P, Coroutine[Any, Any, T]], *args: P.args, **kwargs: P.kwargs
    ) -> TaskHandle[T]: ...

    @overload
    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> TaskHandle[R]: ...

    def enqueue(self, *args: Any, **kwargs: Any) -> TaskHandle[Any]:
        """Store one task that runs ``fn(*args, **kwargs)`` on a worker."""
        [handle] = self._create([self.new_task(args, kwargs)])
        return handle

    @overload
    async def aenqueue(
        self: TaskFunction[P, Coroutine[Any, Any, T]], *args: P.args, **kwargs: P.kwargs
    ) -> TaskHandle[T]: ...

    @overload
    async def aenqueue(self, *args: P.args, **kwargs: P.kwargs) -> TaskHandle[R]: ...

    async def aenqueue(self, *args: Any, **kwargs: Any) -> TaskHandle[Any]:
        """:meth:`enqueue` from async code, without blocking the event loop.

        With ``options(connection=conn)``, ``conn`` is the caller's async driver
        connection (a ``psycopg.AsyncConnection``): the task is written on it,
        awaited here, in its open transaction, and exists if and only if the
        caller commits. Without a connection, the enqueue runs in a thread."""
        [handle] = await self._acreate([self.new_task(args, kwargs)])
        return handle

    async def _acreate(self, tasks: list[NewTask]) -> list[TaskHandle[R]]:
        """:meth:`_create` from async code: awaited on the caller's async
        connection if it gave one, else run in a thread."""
        connection = self._options.connection
        if connection is None:
            return await asyncio.to_thread(self._create, tasks)
        if self.app.opened:
            store = self.app.store
        else:  # its first use opens it (and may migrate it): not on the event loop
            store = await asyncio.to_thread(lambda: self.app.store)
        batch: _Batch[R] = _Batch([self.prepared(task) for task in tasks])
        while True:
            try:
                created = await store.atask_create_many(
                    batch.kept(), now=_clock_of(store), connection=connection
                )
                break
            except UniqueConflict as conflict:
                batch.reject(conflict)  # nothing was written: write the rest
        return batch.handles(store, created)

    @overload
    def enqueue_many(
        self: TaskFunction[P, Coroutine[Any, Any, T]],
        calls: Iterable[Call[P, Coroutine[Any, Any, T]] | CallArgs],
    ) -> list[TaskHandle[T]]: ...

    @overload
    def enqueue_many(self, calls: Iterable[Call[P, R] | CallArgs]) -> list[TaskHandle[R]]: ...

    def enqueue_many(self, calls: Iterable[Any]) -> list[TaskHandle[Any]]:
        """Store many tasks in one round trip, all or none. Each item is
        ``task.call(...)`` (checked by type checkers against the signature), a
        tuple of positional arguments or a dict of keyword arguments."""
        return self._create(self._tasks_of(calls))

    @overload
    async def aenqueue_many(
        self: TaskFunction[P, Coroutine[Any, Any, T]],
        calls: Iterable[Call[P, Coroutine[Any, Any, T]] | CallArgs],
    ) -> list[TaskHandle[T]]: ...

    @overload
    async def aenqueue_many(
        self, calls: Iterable[Call[P, R] | CallArgs]
    ) -> list[TaskHandle[R]]: ...

    async def aenqueue_many(self, calls: Iterable[Any]) -> list[TaskHandle[Any]]:
        """:meth:`enqueue_many` from async code (on the caller's async connection
        if ``options(connection=...)`` gave one, as :meth:`aenqueue`)."""
        return await self._acreate(self._tasks_of(calls))

    def _tasks_of(self, calls: Iterable[Any]) -> list[NewTask]:
        tasks = []
        for index, call in enumerate(calls):
            if isinstance(call, Call):
                if call.task != self.name:
                    raise InvalidInput(
                        f"calls[{index}]", f"a call of {call.task}, not of {self.name}"
                    )
                tasks.append(self.new_task(call.args, call.kwargs, index))
            elif isinstance(call, Mapping):
                tasks.append(self.new_task((), call, index))
            elif isinstance(call, tuple):
                tasks.append(self.new_task(call, {}, index))
            else:
                raise InvalidInput(
                    f"calls[{index}]", "must be task.call(...), a tuple of args or a dict of kwargs"
                )
        return tasks

    def new_task(
        self,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        index: int | None = None,
        *,
        where: str | None = None,
        given: bool = False,
    ) -> NewTask:
        """The task that would be stored for this call (arguments checked,
        ``given``: after one more argument first, what a workflow's task is
        given by the tasks before it). ``where`` names it in a refusal."""
        where = where or ("args" if index is None else f"calls[{index}]")
        self._bind((None, *args) if given else args, kwargs, where)
        config, opts = self.config, self._options
        return NewTask(
            # An option given empty is refused by the store, never read as "unset".
            topic=config.topic if opts.topic is None else opts.topic,
            name=config.name,
            data={"args": list(args), "kwargs": dict(kwargs)},
            # Chosen here, so that a refused unique task still has an id to report.
            id=new_id() if opts.id is None else opts.id,
            sub_topic=config.sub_topic if opts.sub_topic is None else opts.sub_topic,
            group_id=opts.group_id,
            description=opts.description,
            priority=config.priority if opts.priority is None else opts.priority,
            max_attempts=config.retries + 1,
            tags=config.tags,
            timeout=config.timeout,
            run_at=opts.run_at,
            delay=opts.delay,
            unique=self._unique_rule(args, kwargs),
            meta=opts.meta,
            expires=config.expires if opts.expires is None else opts.expires,
            **self._keys((None, *args) if given else args, kwargs),
        )

    def _keys(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The task's limit, order and fair keys, as its declaration computes them (a
        workflow's task, given what comes before it, from ``None`` in its place:
        a key cannot depend on what is not known at enqueue)."""
        config, keys = self.config, dict[str, Any]()
        limit = config.concurrency
        if limit is not None:
            key = key_of(limit.name or self.name, limit.key, self._signature, args, kwargs)
            if key is not None:
                keys.update(limit_key=key, limit_max=limit.max_running)
        if config.ordered_by is not None:
            keys["order_key"] = key_of(self.name, config.ordered_by, self._signature, args, kwargs)
        if config.fair_key is not None:
            # One tenant's tasks share turns whichever function they run.
            keys["fair_key"] = key_of("fair", config.fair_key, self._signature, args, kwargs)
        return keys

    def _bind(self, args: Sequence[Any], kwargs: Mapping[str, Any], where: str) -> None:
        """Refuse arguments the function could never be called with (the
        precompiled check decides; ``Signature.bind`` words the refusal)."""
        if self._fits(args, kwargs):
            return
        said = f"do not fit {self.name}{self._signature}"
        try:
            self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise InvalidInput(where, f"{said}: {exc}") from None
        # Python 3.13.0's bind takes a positional-only parameter's name given to
        # **kwargs for its value; a call does not.
        raise InvalidInput(where, f"{said}: a positional-only parameter is given by name")

    def _unique_rule(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> UniqueRule | None:
        unique = self.config.unique
        if unique is None:
            return None
        key = lock_key(self.name, unique.values(self._signature, args, kwargs))
        return unique.rule(key, self.app.unique_ttl)

    def _create(self, tasks: list[NewTask]) -> list[TaskHandle[R]]:
        """Store ``tasks``; a conflicting unique task is rejected (a handle that
        says so) or raises ``UniqueConflict``, as its rule says."""
        connection, store = self._connection(), self.app.store
        batch: _Batch[R] = _Batch([self.prepared(task) for task in tasks])
        while True:
            try:
                created = store.task_create_many(
                    batch.kept(), now=_clock_of(store), connection=connection
                )
                break
            except UniqueConflict as conflict:
                # The batch wrote nothing: drop the rejected items and write the rest.
                batch.reject(conflict)
        if self.app.on_enqueued is not None and connection is None:
            created = self.app.on_enqueued(created)
        return batch.handles(self.app.store, created)

    def _connection(self) -> Any:
        """The caller's connection to write on: the one ``options`` gave, else the
        one the App's ``enqueue_connection`` gives now (``None``: the store's)."""
        if self._options.connection is not None or self.app.enqueue_connection is None:
            return self._options.connection
        return self.app.enqueue_connection()

    def prepared(self, task: NewTask) -> NewTask:
        """``task`` as an enqueue stores it: with the headers the App's middleware
        adds. (Only enqueues call the middleware: building a task to check it, as
        ``new_task`` does, enqueues nothing.) They start from the ``headers``
        option, if given."""
        given = self._options.headers
        if not self.app.middleware and not given:
            return task
        headers = task_headers(self.app.middleware, task.name, given)
        if not headers or not isinstance(task.data, dict):
            return task
        return replace(task, data={**task.data, "headers": headers})


def _binder(signature: inspect.Signature) -> Callable[[Sequence[Any], Mapping[str, Any]], bool]:
    """A check that says whether a call of the function accepts the arguments,
    made once per function: ``Signature.bind`` costs microseconds per call,
    spent again on every enqueue, and is not the call's rule in every Python
    (before 3.13 it refuses a positional-only parameter's name given to
    ``**kwargs``, which a call takes; 3.13.0 takes that name for the parameter's
    value, which a call does not). The property test of the API's document
    (``tests/unit/test_http_calls.py``) holds it to real calls."""
    kinds = inspect.Parameter
    params = list(signature.parameters.values())
    positional = [
        p for p in params if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)
    ]
    names = tuple(p.name for p in positional)
    by_keyword = {
        p.name: i for i, p in enumerate(positional) if p.kind is not kinds.POSITIONAL_ONLY
    }
    required = [(i, p.name) for i, p in enumerate(positional) if p.default is kinds.empty]
    keyword_only = {p.name for p in params if p.kind is kinds.KEYWORD_ONLY}
    required_keywords = [
        p.name for p in params if p.kind is kinds.KEYWORD_ONLY and p.default is kinds.empty
    ]
    var_args = any(p.kind is kinds.VAR_POSITIONAL for p in params)
    var_kwargs = any(p.kind is kinds.VAR_KEYWORD for p in params)
    most = len(names)

    def fits(args: Sequence[Any], kwargs: Mapping[str, Any]) -> bool:
        given = len(args)
        if given > most and not var_args:
            return False
        for key in kwargs:
            index = by_keyword.get(key)
            if index is None:
                # **kwargs takes any other name, a positional-only one's too (as a
                # call does; Signature.bind refuses that before Python 3.13).
                if key not in keyword_only and not var_kwargs:
                    return False
            elif index < given:
                return False
        for index, name in required:
            if index >= given and (name not in kwargs or name not in by_keyword):
                return False
        return all(name in kwargs for name in required_keywords)

    return fits


def _clock_of(store: object) -> datetime | None:
    """The time to stamp new tasks of ``store`` with: the moved clock of a
    ``run_until_empty`` running in this context, else ``None`` (the store's)."""
    moved = ENQUEUE_CLOCK.get()
    return moved[1]() if moved is not None and moved[0] is store else None


class _Batch(Generic[R]):
    """The tasks of one enqueue while they are written: which are still to be
    written, and which their unique rule rejected. The one home of the retry on
    a unique conflict, for :meth:`TaskFunction._create` and ``_acreate``."""

    def __init__(self, tasks: list[NewTask]) -> None:
        self.tasks = tasks
        self.rejected: dict[int, UniqueConflict] = {}
        self._kept = list(range(len(tasks)))

    def kept(self) -> list[NewTask]:
        """The tasks to write: all but those rejected so far."""
        return [self.tasks[i] for i in self._kept]

    def reject(self, conflict: UniqueConflict) -> None:
        """Leave out the items of ``conflict``, raised by a write of :meth:`kept`
        that wrote nothing; re-raises it if the rule of any says raise."""
        self.rejected.update(self._rejections(conflict))
        self._kept = [i for i in self._kept if i not in self.rejected]

    def handles(self, store: Store, created: list[Task]) -> list[TaskHandle[R]]:
        """A handle for each task, in the order given: ``created`` (the tasks
        kept, as written) with the rejected ones in their places."""
        handles: list[TaskHandle[R]] = [TaskHandle(store, task.id, task) for task in created]
        for index, refusal in sorted(self.rejected.items()):
            handles.insert(index, TaskHandle(store, self.tasks[index].id or "", rejected=refusal))
        return handles

    def _rejections(self, conflict: UniqueConflict) -> dict[int, UniqueConflict]:
        """The items of ``conflict`` to reject; re-raises it if any says raise."""
        found: dict[int, UniqueConflict] = {}
        for position, key, holder in conflict.conflicts:
            index = self._kept[position]
            rule = self.tasks[index].unique
            if rule is None or rule.on_conflict is not OnConflict.REJECT:
                raise UniqueConflict(key, holder) from None
            found[index] = UniqueConflict(key, holder)
        return found
