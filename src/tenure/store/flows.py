"""Workflows on the store: tasks created together with gates between them (a
group's callback, a chain's links), a part of :class:`~tenure.store.Store`.

A gate is decided where the tasks' endings are written, not by a process that
watches them: each backend counts a member's ending in the same transaction
that writes it, and the ending that leaves none remaining releases the tasks
behind the gate in that transaction too. A worker killed before its commit
leaves nothing counted; two schedulers, or a retry racing a cancel, find the
count where the last commit left it. So a callback runs exactly once, and
never before its group has ended, whatever dies along the way.

Everything here checks a flow before it is written: which task waits behind
which gate, and that the gates lead nowhere back to themselves.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from tenure.errors import InvalidInput
from tenure.store import validate
from tenure.store.backend import Backend
from tenure.store.types import Gate, NewGate, NewTask, Placement, PreparedTask
from tenure.task import GateMode, GateShape, Status, Task

MAX_FLOW_TASKS = 10_000
"""Most tasks one flow creates: a flow is one transaction."""


def gate_taken() -> InvalidInput:
    """What a flow naming a gate that exists is refused with, by every store
    (nothing of the flow is written)."""
    return InvalidInput("gates", "a gate with one of these ids exists already")


class Flows(Backend):
    """Creating flows and reading their gates (a part of :class:`~tenure.store.Store`)."""

    @abstractmethod
    def _prepare_many(self, tasks: Sequence[NewTask], now: datetime | None) -> list[PreparedTask]:
        """``tasks`` checked and encoded (the store's, as every create does it)."""

    def flow_create(
        self,
        tasks: Sequence[NewTask],
        gates: Sequence[NewGate],
        *,
        now: datetime | None = None,
        connection: Any = None,
    ) -> list[Task]:
        """Create ``tasks`` and the ``gates`` between them in one transaction,
        or nothing. The tasks behind a gate start ``waiting``; the others as
        any create makes them. ``connection``: as in ``task_create_many``."""
        if len(tasks) > MAX_FLOW_TASKS:
            raise InvalidInput("tasks", f"at most {MAX_FLOW_TASKS} tasks in one flow")
        placed = placements(gates, len(tasks))
        for index, task in enumerate(tasks):
            if task.unique is not None:
                raise InvalidInput(f"tasks[{index}].unique", "a task of a flow cannot be unique")
        prepared = self._prepare_many(tasks, now)
        if not prepared:
            return []
        return self._flow_create(prepared, placed, list(gates), now, connection)

    def gate_get(self, gate_id: str) -> Gate | None:
        """The gate ``gate_id``, or ``None`` (never made, or pruned)."""
        return self._gate_get(validate.text(gate_id, "gate_id"))


def placed(created: list[Task], placements: Sequence[Placement]) -> list[Task]:
    """A flow's tasks as created: with their gates, waiting behind one."""
    return [
        replace(
            task,
            status=Status.PENDING if where.gate_in is None else Status.WAITING,
            gate_in=where.gate_in,
            gate_out=where.gate_out,
        )
        for task, where in zip(created, placements, strict=True)
    ]


def placements(gates: Sequence[NewGate], count: int) -> list[Placement]:
    """Where each of ``count`` tasks stands among ``gates``: the gate it waits
    behind and the gate it is a member of. Refuses a gate without members or
    without tasks behind it, a task in two gates' members (or behind two), and
    gates that lead back to themselves."""
    gate_in: list[str | None] = [None] * count
    gate_out: list[str | None] = [None] * count
    seen: set[str] = set()
    for at, gate in enumerate(gates):
        where = f"gates[{at}]"
        _check_gate(gate, where, seen)
        for index in gate.members:
            _place(gate_out, index, gate.id, f"{where}.members", "a member of")
        for index in gate.waiting:
            _place(gate_in, index, gate.id, f"{where}.waiting", "waiting behind")
    _refuse_cycles(gates, gate_out)
    return [Placement(i, o) for i, o in zip(gate_in, gate_out, strict=True)]


def _check_gate(gate: NewGate, where: str, seen: set[str]) -> None:
    if not isinstance(gate, NewGate):
        raise InvalidInput(where, "must be a NewGate")
    validate.text(gate.id, f"{where}.id")
    if gate.id in seen:
        raise InvalidInput(f"{where}.id", f"{gate.id!r} names two gates")
    seen.add(gate.id)
    if not isinstance(gate.mode, GateMode):
        raise InvalidInput(f"{where}.mode", "must be a GateMode")
    if not isinstance(gate.shape, GateShape):
        raise InvalidInput(f"{where}.shape", "must be a GateShape")
    if not gate.members:
        raise InvalidInput(f"{where}.members", "a gate needs a task to wait for")
    if not gate.waiting:
        raise InvalidInput(f"{where}.waiting", "a gate needs a task waiting behind it")
    if gate.shape is GateShape.RESULT and len(gate.members) != 1:
        raise InvalidInput(f"{where}.shape", "gives one member's result: it needs one member")


def _place(slots: list[str | None], index: object, gate_id: str, where: str, what: str) -> None:
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(slots):
        raise InvalidInput(where, f"{index!r} is not the place of a task of the flow")
    if slots[index] is not None:
        raise InvalidInput(where, f"tasks[{index}] is already {what} gate {slots[index]!r}")
    slots[index] = gate_id


def _refuse_cycles(gates: Sequence[NewGate], gate_out: list[str | None]) -> None:
    """Refuse gates that wait, through their tasks, on themselves (no task of
    such a loop could ever start): gate g leads to gate h when a task behind g
    is a member of h; whatever a topological order cannot place is in a loop."""
    leads = {gate.id: {gate_out[i] for i in gate.waiting if gate_out[i] is not None}
             for gate in gates}  # fmt: skip
    entering = dict.fromkeys(leads, 0)
    for targets in leads.values():
        for target in targets:
            entering[str(target)] += 1
    free = [gate for gate, count in entering.items() if count == 0]
    while free:
        for target in leads[free.pop()]:
            entering[str(target)] -= 1
            if entering[str(target)] == 0:
                free.append(str(target))
    looped = sorted(gate for gate, count in entering.items() if count > 0)
    if looped:
        raise InvalidInput("gates", f"gates {', '.join(map(repr, looped))} wait on themselves")
