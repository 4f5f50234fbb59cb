"""The application object: configuration, the task registry and the store, wired here.

``App()`` with no URL uses ``$TENURE_URL``, or else the embedded SQLite file
``tenure.db`` in the working directory. The store is opened on first use, so
creating an App and declaring tasks has no side effects. Only functions declared
with ``@app.task`` can be enqueued by name or run by a worker.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, Unpack, overload

from tenure import workflows
from tenure.admin import TaskAdmin
from tenure.checks import INT32, integer, text
from tenure.checks import seconds as check_seconds
from tenure.declaration import Declaration, declare
from tenure.errors import ConfigError, InvalidInput
from tenure.events import Events
from tenure.flowhandles import GroupHandle
from tenure.function import TaskFunction
from tenure.handle import TaskHandle
from tenure.hooks import Hook, HookKind, Hooks, Middleware
from tenure.ids import default_owner
from tenure.loading import find
from tenure.maintenance.observer import Observation, Reports
from tenure.maintenance.periodic import Periodic
from tenure.maintenance.scheduler import Scheduler
from tenure.maintenance.schedules import Schedules
from tenure.registry import Registry
from tenure.store import DEFAULT_MAX_PAYLOAD_BYTES, Store, open_store, resolve_url
from tenure.store.flowcontrol import MIN_AGEING_STEP
from tenure.store.schedules import DEFAULT_CATCH_UP
from tenure.store.url import redact
from tenure.store.validate import status as check_status
from tenure.unique import DEFAULT_TTL
from tenure.workflows import Signature

if TYPE_CHECKING:
    from tenure.task import Task
    from tenure.worker import Worker

P = ParamSpec("P")
R = TypeVar("R")
H = TypeVar("H", bound=Hook)


class App:
    """A tenure application bound to one store."""

    def __init__(
        self,
        url: str | None = None,
        *,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        unique_ttl: float = DEFAULT_TTL,
        migrate: bool = True,
    ) -> None:
        self.url = resolve_url(url)
        self.migrate = migrate
        """Whether opening a PostgreSQL store applies its migrations (False: the
        schema is ``tenure migrate``'s to keep). SQLite's file is always brought
        up to date: it has no one else to do it."""
        self.unique_ttl = check_seconds(unique_ttl, "unique_ttl")
        """Lifetime of a unique lock, in seconds from the task's scheduled time,
        for tasks whose :class:`~tenure.Unique` gives no ``ttl``."""
        self.registry = Registry(max_payload_bytes=max_payload_bytes)
        """The declared tasks, and what running them needs: all a worker knows of
        the App."""
        self.periodics: list[Periodic] = []
        self.limits: dict[str, int] = {}
        """The topics' limits declared in code (:meth:`limit`)."""
        self.rates: dict[str, tuple[int, float]] = {}
        """The topics' rates declared in code (:meth:`rate`): most starts, per seconds."""
        self.ageings: dict[str, tuple[float, int]] = {}
        """The topics' ageing declared in code (:meth:`ageing`): seconds a step, most steps."""
        self.enqueue_connection: Callable[[], Any] | None = None
        """Gives the connection of the caller's open transaction that an enqueue
        without ``options(connection=...)`` writes on, or ``None`` for the
        store's own (:mod:`tenure.contrib.django` gives Django's in an atomic
        block)."""
        self.on_enqueued: Callable[[list[Task]], list[Task]] | None = None
        """Given the tasks each enqueue stored, returns them as they are now
        (:func:`tenure.testing.eager` runs them here)."""
        self.observations: list[Observation] = []
        self.role = "app"
        """What this process is to the store, set before it is opened: PostgreSQL
        names its sessions ``tenure-<role>`` (``tenure-worker``,
        ``tenure-scheduler``, ``tenure-http``; ``tenure-app`` for your own
        code's enqueues), so ``pg_stat_activity`` tells them apart."""
        self.events = Events(lambda: self.store)
        """Follow every transition and report: :class:`~tenure.events.Events`."""
        self.reports = Reports(lambda: self.store)
        """The observer's latest reports: ``app.reports.get(key)``, ``.list()``."""
        self.schedules = Schedules(lambda: self.store, self.registry, self.periodics)
        """Periodic tasks added, edited, paused and removed at run time, beside
        those declared in code: :class:`~tenure.maintenance.schedules.Schedules`."""
        self._opened: _Opened | None = None
        self._opening = threading.Lock()

    @property
    def max_payload_bytes(self) -> int:
        """Largest payload or result, in bytes of JSON: the store and the worker
        check against this one value."""
        return self.registry.max_payload_bytes

    @max_payload_bytes.setter
    def max_payload_bytes(self, limit: int) -> None:
        self.registry.max_payload_bytes = limit

    @property
    def hooks(self) -> Hooks:
        return self.registry.hooks

    @hooks.setter
    def hooks(self, hooks: Hooks) -> None:
        self.registry.hooks = hooks

    @property
    def middleware(self) -> list[Middleware]:
        return self.registry.middleware

    @middleware.setter
    def middleware(self, middleware: list[Middleware]) -> None:
        self.registry.middleware = middleware

    @property
    def import_path(self) -> str | None:
        """``module:attribute`` that finds this App again (child processes need it)."""
        return self.registry.import_path

    @import_path.setter
    def import_path(self, path: str | None) -> None:
        self.registry.import_path = path

    def use(self, url: str) -> None:
        """Point the App at another store before it is first used (``--url``)."""
        if self.opened:
            raise ConfigError("the App's store is open already; choose the URL before using it")
        self.url = resolve_url(url)

    @property
    def opened(self) -> bool:
        """Whether the store has been opened (by a first use, and not closed since)."""
        return self._opened is not None

    @property
    def store(self) -> Store:
        """The store, opened (and migrated, unless told not to) on first use:
        once, whatever the number of threads that ask for it at the same time."""
        return self._open().store

    @property
    def tasks(self) -> TaskAdmin:
        """Look up, list, count, cancel and retry tasks."""
        return self._open().tasks

    def _open(self) -> _Opened:
        opened = self._opened
        if opened is not None:  # the common case takes no lock
            return opened
        with self._opening:
            if self._opened is None:
                self._opened = _Opened.of(self._open_store())
            return self._opened

    def _open_store(self) -> Store:
        options: dict[str, object] = {"max_payload_bytes": self.max_payload_bytes}
        if not self.url.startswith("sqlite"):
            options["role"] = self.role
            if not self.migrate:
                options["migrate"] = False
        return open_store(self.url, **options)

    @overload
    def task(self, fn: Callable[P, R], /) -> TaskFunction[P, R]: ...

    @overload
    def task(
        self, **declared: Unpack[Declaration]
    ) -> Callable[[Callable[P, R]], TaskFunction[P, R]]: ...

    # mypy wrongly reports this implementation as not accepting overload 2 when the
    # overload's type variables appear only in its return type.
    def task(  # type: ignore[misc]
        self, fn: Callable[..., Any] | None = None, /, **declared: Unpack[Declaration]
    ) -> TaskFunction[Any, Any] | Callable[[Callable[P, R]], TaskFunction[P, R]]:
        """Declare a task: ``@app.task`` or ``@app.task(topic=..., retries=...)``.

        The keywords are the fields of :class:`~tenure.declaration.TaskConfig`, with
        its defaults (:class:`~tenure.declaration.Declaration` types them). The name
        defaults to the function's module and qualified name; workers find the
        function by it.
        """

        def register(function: Callable[P, R]) -> TaskFunction[P, R]:
            config = declare(function, declared)
            task_function = TaskFunction(self, function, config)
            self.registry.add(task_function)
            return task_function

        return register if fn is None else register(fn)

    def enqueue(self, name: str, *args: Any, **kwargs: Any) -> TaskHandle[Any]:
        """Enqueue the registered task ``name``; an unknown name is refused."""
        return self.lookup(name).enqueue(*args, **kwargs)

    def group(
        self,
        members: Iterable[Signature[Any]],
        *,
        on_complete: Signature[Any] | None = None,
        group_id: str | None = None,
        connection: Any = None,
    ) -> GroupHandle:
        """Enqueue ``members`` (``task.s(...)``) to run side by side, in one
        transaction, and ``on_complete`` once every one has ended, with how
        each ended (a list of :class:`~tenure.Ended`): exactly once, decided
        by the store with the last member's ending. ``connection``: written in
        the caller's open transaction. See :mod:`tenure.workflows`."""
        planned = workflows.group(members, on_complete=on_complete, group_id=group_id)
        return planned.enqueue(connection=connection)

    def lookup(self, name: str) -> TaskFunction[Any, Any]:
        """The registered task called ``name``."""
        return self.registry.lookup(name)

    def periodic(
        self,
        schedule: str | float,
        *,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        name: str | None = None,
        tz: str | None = None,
        catch_up: float = DEFAULT_CATCH_UP,
    ) -> Callable[[TaskFunction[P, R]], TaskFunction[P, R]]:
        """Enqueue a task on a schedule: a cron expression (``"*/5 * * * *"``, read
        in the IANA zone ``tz``, UTC by default) or an interval in seconds. Apply
        it above ``@app.task``; the elected scheduler enqueues one task per tick,
        exactly once, with ``args``/``kwargs``. It starts from the first time a
        scheduler stores it; after a gap (a failover, a deploy) the ticks missed
        within the last ``catch_up`` seconds are enqueued, older ones skipped."""

        def register(function: TaskFunction[P, R]) -> TaskFunction[P, R]:
            if not isinstance(function, TaskFunction):
                raise ConfigError("@app.periodic goes above @app.task")
            periodic = Periodic(
                function, schedule, args, dict(kwargs or {}), name or "", tz, catch_up
            )
            if any(p.name == periodic.name for p in self.periodics):
                raise ConfigError(f"a periodic task named {periodic.name!r} exists already")
            self.periodics.append(periodic)
            return function

        return register

    def limit(self, topic: str, *, max_running: int) -> None:
        """Let at most ``max_running`` tasks of ``topic`` run at once, across
        every worker sharing the store. Declared in code, the limit is stored
        by the scheduler as its term begins (a deploy, a failover);
        ``tenure limit`` or ``app.tasks.limit`` change it at run time until
        then. Tasks over it wait pending, spending no attempt."""
        self.limits[text(topic, "topic")] = integer(max_running, "max_running", minimum=1)

    def rate(self, topic: str, *, max_starts: int, per: float = 60.0) -> None:
        """Let at most ``max_starts`` tasks of ``topic`` start within any
        ``per`` seconds, across every worker, on the store's clock (100 a
        minute to a partner's API). Stored as :meth:`limit`'s are; ``tenure
        rate`` changes it at run time. Tasks over it wait pending."""
        most = integer(max_starts, "max_starts", minimum=1)
        self.rates[text(topic, "topic")] = (most, check_seconds(per, "per"))

    def ageing(self, topic: str, *, every: float = 60.0, most: int = 10) -> None:
        """Take ``topic``'s pending tasks as if their priority rose by one for
        every ``every`` seconds they have waited, at most ``most``: low-priority
        and retried tasks (each retry lowers a priority) still start under a
        steady flow of higher priorities. Stored as :meth:`limit`'s are;
        ``tenure ageing`` changes it at run time."""
        raised = integer(most, "most", minimum=1, bounds=INT32)
        step = check_seconds(every, "every")
        if step < MIN_AGEING_STEP:
            raise InvalidInput("every", f"must be at least {MIN_AGEING_STEP} s")
        self.ageings[text(topic, "topic")] = (step, raised)

    def observe(
        self,
        key: str,
        *,
        status: str | None = None,
        topic: str | None = None,
        sub_topic: str | None = None,
        name: str | None = None,
        group: str | None = None,
        age: float | None = None,
        since: float | str | None = None,
        at: str | None = None,
        every: float | None = None,
        limit: int = 1000,
    ) -> Observation:
        """Run a named query over tasks on a schedule and report its result.

        The tasks with ``status``, ``topic``, ``sub_topic``, ``name`` and
        ``group`` (``None``: any), created at least ``age`` seconds before the
        run and within ``since`` seconds of it (or ``since="today"``, UTC). It
        runs every day at ``at`` (``"HH:MM:SS"`` UTC, midnight by default) or
        every ``every`` seconds; the elected scheduler runs it once per slot,
        saves the first ``limit`` matching ids with the total as the key's
        latest report (``app.reports.get(key)``) and appends a report event.
        """
        observation = Observation(
            key, None if status is None else check_status(status), topic, sub_topic, name,
            group, age, since, at, every, limit,
        )  # fmt: skip
        if any(o.key == observation.key for o in self.observations):
            raise ConfigError(f"an observation named {observation.key!r} exists already")
        self.observations.append(observation)
        return observation

    def on(self, kind: HookKind) -> Callable[[H], H]:
        """Call the decorated function with an :class:`~tenure.hooks.Outcome` each
        time a task is ``started``, ``succeeded``, ``retrying``, ``failed``,
        ``snoozed`` or ``cancelled`` on a worker of this App."""

        def register(hook: H) -> H:
            self.hooks.add(kind, hook)
            return hook

        return register

    def add_middleware(self, middleware: Middleware) -> None:
        """Wrap every enqueue and every execution of this App's tasks (see
        :class:`~tenure.hooks.Middleware`); the first added is the outermost."""
        if not isinstance(middleware, Middleware):
            raise ConfigError("middleware must be a tenure.Middleware")
        self.middleware.append(middleware)

    def scheduler(self, owner: str | None = None, **options: Any) -> Scheduler:
        """The scheduler for this App's store (see
        :class:`tenure.maintenance.scheduler.Scheduler`)."""
        return Scheduler(
            self.store,
            owner or default_owner(),
            periodics=self.periodics,
            limits=self.limits,
            rates=self.rates,
            ageing=self.ageings,
            tasks=self.registry.get,
            observations=self.observations,
            **options,
        )

    def worker(
        self,
        *,
        scheduler: bool = True,
        scheduler_options: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> Worker:
        """A worker for this App's tasks (see :class:`tenure.worker.Worker`), hosting
        the scheduler unless ``scheduler=False`` (``scheduler_options`` go to
        :meth:`scheduler`). It opens the store when it runs, waiting for it if
        it is down."""
        from tenure.worker import Worker  # noqa: PLC0415 - the worker is loaded on demand

        hosted: Callable[[str], Scheduler] | None = None
        if scheduler:
            hosted = partial(self.scheduler, **dict(scheduler_options or {}))

        def store() -> Store:
            return self.store

        return Worker(store, self.registry, scheduler=hosted, store_url=self.url, **options)

    def handle(self, task_id: str) -> TaskHandle[Any]:
        """A handle on an existing task, to refresh or wait on it."""
        return TaskHandle(self.store, task_id)

    def close(self) -> None:
        """Close the store if it was opened; a later use opens it again."""
        with self._opening:
            opened, self._opened = self._opened, None
        if opened is not None:
            opened.store.close()

    @contextmanager
    def using(self, url: str) -> Iterator[App]:
        """The App on the store at ``url`` inside the block (opened on first
        use there, closed at its end); afterwards on its own store again, as it
        was: still open if it was, untouched either way. For tests
        (:func:`tenure.testing.isolated`) and one-off scripts."""
        with self._opening:
            saved_url, saved, self._opened = self.url, self._opened, None
            self.url = resolve_url(url)
        try:
            yield self
        finally:
            # Swapped back at once, so that no thread opens the block's store
            # anew while it closes; then closed.
            with self._opening:
                inside, self._opened = self._opened, saved
                self.url = saved_url
            if inside is not None:
                inside.store.close()

    def __repr__(self) -> str:
        return f"App({redact(self.url)!r})"


class _Opened:
    """An App's open store and what is made on it, swapped together."""

    __slots__ = ("store", "tasks")

    def __init__(self, store: Store, tasks: TaskAdmin) -> None:
        self.store = store
        self.tasks = tasks

    @classmethod
    def of(cls, store: Store) -> _Opened:
        return cls(store, TaskAdmin(store))


def load_app(path: str) -> App:
    """The App that ``module:attribute`` names (``tasks:app``), found from the
    current directory first, and told its path (for process-pool children)."""
    app = find(path, App)
    module_name, _, attribute = path.partition(":")
    app.import_path = f"{module_name}:{attribute or 'app'}"
    return app
