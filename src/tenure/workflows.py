"""Workflows: a group of tasks with a callback when all have ended, chains that
pass each result on, and groups inside chains (fan-out, fan-in).

A workflow is planned whole here and written in one transaction
(``Store.flow_create``): every one of its tasks exists from the start, those
that must wait for others ``waiting`` behind a gate. The store, not a process
watching, opens each gate, in the same transaction as the ending of the last
task it waits for (see :mod:`tenure.store.flows`): so a callback is enqueued
exactly once, whatever worker dies or whichever scheduler runs, and what a
task is given from the tasks before it is read from its own row.

    add.s(1, 2).then(mul.s(10)).then(report.s()).enqueue()
    app.group([fetch.s(url) for url in urls], on_complete=summarize.s())
    fetch_all.s().then(tenure.group([parse.s(), index.s()])).then(notify.s()).enqueue()

A task after another is called with that task's result first, then its own
arguments; after a group, with the list of the members' results; a group's
``on_complete`` with a list of :class:`~tenure.Ended`, one per member, however
each ended. A chain stops at a task that fails or is cancelled: every task after
it is cancelled, with an ``UpstreamFailed`` error naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, Union

from tenure.errors import InvalidInput
from tenure.flowhandles import ChainHandle, GroupHandle
from tenure.ids import new_id
from tenure.store.types import NewGate, NewTask
from tenure.task import GateMode, GateShape, Task

if TYPE_CHECKING:
    from tenure.store import Store

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class FlowApp(Protocol):
    """What a workflow needs of its App: the store to write to, and eager
    mode's hook (``App.on_enqueued``)."""

    @property
    def store(self) -> Store: ...

    @property
    def on_enqueued(self) -> Callable[[list[Task]], list[Task]] | None: ...


class FlowTask(Protocol[R_co]):
    """What a workflow needs of a task function (a ``TaskFunction``): its App,
    and the task it stores for a call."""

    @property
    def app(self) -> FlowApp: ...

    def new_task(
        self,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        index: int | None = None,
        *,
        where: str | None = None,
        given: bool = False,
    ) -> NewTask: ...

    def prepared(self, task: NewTask) -> NewTask: ...


@dataclass(frozen=True)
class Signature(Generic[R]):
    """A task and some of its arguments, not enqueued: ``add.s(1, 2)``. In a
    workflow, a task after others is called with what they gave first."""

    function: FlowTask[R]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def then(self, following: Stage) -> Chain:
        """A chain: this task, then ``following`` with its result."""
        return Chain((self,)).then(following)

    def enqueue(self, *, connection: Any = None) -> ChainHandle:
        """Enqueue this task alone, as a chain of one."""
        return Chain((self,)).enqueue(connection=connection)


@dataclass(frozen=True)
class Group:
    """Tasks that run side by side, and a callback once all have ended
    (:func:`group`)."""

    members: tuple[Signature[Any], ...]
    on_complete: Signature[Any] | None = None
    group_id: str | None = None

    def then(self, following: Stage) -> Chain:
        """A chain: this group, then ``following`` with the members' results
        (or with the callback's result, if the group has one)."""
        return Chain((self,)).then(following)

    def enqueue(self, *, connection: Any = None) -> GroupHandle:
        """Enqueue the members and the callback, in one transaction."""
        plan = _Plan.of((self,), self.group_id)
        tasks = plan.write(connection)
        members = tasks[: len(self.members)]
        callback = tasks[len(self.members)] if self.on_complete is not None else None
        return GroupHandle(plan.app.store, plan.group_id, members, callback)


Stage = Union[Signature[Any], Group]  # noqa: UP007 - a runtime alias, checked with isinstance


@dataclass(frozen=True)
class Chain:
    """Stages run one after another, each given what the one before returned."""

    stages: tuple[Stage, ...]
    group_id: str | None = None

    def then(self, following: Stage) -> Chain:
        """This chain, then ``following``."""
        if not isinstance(following, Signature | Group):
            raise InvalidInput("then", "takes task.s(...) or tenure.group(...)")
        return Chain((*self.stages, following), self.group_id)

    def enqueue(self, *, connection: Any = None) -> ChainHandle:
        """Enqueue every task of the chain, in one transaction; only the first
        stage may start at once."""
        plan = _Plan.of(self.stages, self.group_id)
        tasks = plan.write(connection)
        last = [tasks[i] for i in plan.last]
        split = plan.split(tasks)
        return ChainHandle(plan.app.store, plan.group_id, split, last, many=plan.ends_in_group)


def group(
    members: Iterable[Signature[Any]],
    *,
    on_complete: Signature[Any] | None = None,
    group_id: str | None = None,
) -> Group:
    """Tasks that run side by side, not enqueued yet: ``.enqueue()`` it, or make
    it a stage of a chain. ``on_complete`` is enqueued once every member has
    ended, done, failed or cancelled, with their outcomes. ``group_id``: the
    id its tasks are listed under (``app.tasks.group``), a new one by default."""
    listed = tuple(members)
    if not listed:
        raise InvalidInput("members", "a group needs at least one task")
    for index, member in enumerate(listed):
        if not isinstance(member, Signature):
            raise InvalidInput(f"members[{index}]", "must be task.s(...)")
    if on_complete is not None and not isinstance(on_complete, Signature):
        raise InvalidInput("on_complete", "must be task.s(...)")
    return Group(listed, on_complete, group_id)


class _Plan:
    """A workflow as the tasks and gates the store writes."""

    def __init__(self, app: FlowApp, group_id: str) -> None:
        self.app = app
        self.group_id = group_id
        self.tasks: list[NewTask] = []
        self.gates: list[NewGate] = []
        self.stage_ends: list[list[int]] = []
        self.last: list[int] = []
        self.ends_in_group = False
        """Whether the last stage is a group without callback (what follows it,
        or its handle, gets a list of results, however many members it has)."""
        """The tasks whose results the workflow ends with."""

    @classmethod
    def of(cls, stages: Sequence[Stage], group_id: str | None) -> _Plan:
        app = _one_app(stages)
        plan = cls(app, group_id or new_id())
        for stage in stages:
            plan.last = plan.add_stage(stage, plan.last)
        return plan

    def add_stage(self, stage: Stage, before: list[int]) -> list[int]:
        """Add ``stage`` behind the tasks ``before`` (none: it starts at once);
        the tasks the next stage waits for."""
        start = len(self.tasks)
        if isinstance(stage, Signature):
            self._add(stage, gated=bool(before))
        else:
            for member in stage.members:
                self._add(member, gated=bool(before))
        entered = list(range(start, len(self.tasks)))
        if before:
            shape = GateShape.RESULTS if self.ends_in_group else GateShape.RESULT
            self._gate(before, entered, GateMode.ALL_DONE, shape)
        ends = entered
        if isinstance(stage, Group) and stage.on_complete is not None:
            ends = [self._add(stage.on_complete, gated=True)]
            self._gate(entered, ends, GateMode.ALL_ENDED, GateShape.OUTCOMES)
        self.stage_ends.append(list(range(start, len(self.tasks))))
        self.ends_in_group = isinstance(stage, Group) and stage.on_complete is None
        return ends

    def _add(self, signature: Signature[Any], *, gated: bool) -> int:
        function = signature.function
        where = f"tasks[{len(self.tasks)}]"
        task = function.new_task(signature.args, signature.kwargs, where=where, given=gated)
        self.tasks.append(function.prepared(replace(task, group_id=self.group_id)))
        return len(self.tasks) - 1

    def _gate(
        self, members: list[int], waiting: list[int], mode: GateMode, shape: GateShape
    ) -> None:
        self.gates.append(NewGate(new_id(), tuple(members), tuple(waiting), mode, shape))

    def write(self, connection: Any) -> list[Task]:
        """Write the workflow, in the caller's transaction if ``connection`` is
        given; its tasks as created (as they ended, in eager mode)."""
        store = self.app.store
        created = store.flow_create(self.tasks, self.gates, connection=connection)
        if self.app.on_enqueued is not None and connection is None:
            created = self.app.on_enqueued(created)
        return created

    def split(self, tasks: list[Task]) -> list[list[Task]]:
        """``tasks`` by stage: each stage's tasks, its callback last."""
        return [[tasks[i] for i in stage] for stage in self.stage_ends]


def _one_app(stages: Sequence[Stage]) -> FlowApp:
    """The App every task of the workflow belongs to (one store writes it)."""
    apps = {id(s.function.app): s.function.app for s in _signatures(stages)}
    if len(apps) != 1:
        raise InvalidInput("tasks", "every task of a workflow must belong to the same App")
    return next(iter(apps.values()))


def _signatures(stages: Sequence[Stage]) -> Iterable[Signature[Any]]:
    for stage in stages:
        if isinstance(stage, Signature):
            yield stage
            continue
        yield from stage.members
        if stage.on_complete is not None:
            yield stage.on_complete
