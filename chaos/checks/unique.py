"""The unique-torture scenario's checks (:data:`CHECKS`),
over the unique tasks of :mod:`chaos.unique`, from the store's tasks and its
event log (the log's order is the order the transitions committed in, and each
lock is taken and given up in the same transaction as the transition that
begins or ends its phase).

- **L1** never two holders of a key: per task name and lock key, the spans in
  which each task held the lock never overlap, in the log's order and by more
  than :data:`OVERLAP` on the store's clock. A task holds
  an ``until_executing`` lock from its creation to its first transition out of
  pending, an ``until_executed`` one from its creation to its ending (done,
  failed or cancelled), a ``while_executing`` one from each start to the next
  transition, except a start its unique rule settled in the same statement
  (a *settled start*: the lock was held, so it never ran).
- **L2** a task enqueued inside a transaction that was rolled back (ids
  :data:`~chaos.unique.ROLLED_BACK`…) is nowhere in the store or its log.
- **L3** each conflict strategy behaves as documented: only a
  ``while_executing`` task's start is ever settled; ``reschedule`` sends it
  back to pending with its attempt given back; ``reject`` cancels it and
  ``raise`` fails the attempt (pending again while attempts remain, else
  failed), both with a ``UniqueConflict`` error; a task to reschedule never
  ends with that error (it may still fail: a death counts as an attempt).
- **L4** no lock outlives its task: after the drain, a task of every name and
  key (ids :data:`~chaos.unique.FINAL`…) was enqueued once more, and each
  was stored and ran to done: none was refused by a lock left behind.

A settled start is written as a transition into running, which the other
checks do not count as a lease granted (:func:`chaos.evidence.settled`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chaos.evidence import Evidence
from chaos.evidence import settled as settled_starts
from chaos.unique import FINAL, ROLLED_BACK, rule_of
from chaos.verdict import Check
from tenure.store.types import Event
from tenure.task import Status, Task

if TYPE_CHECKING:
    from chaos.verdict import Bounds, Result

ENDED = (Status.DONE, Status.FAILED, Status.CANCELLED)
CONFLICT = "UniqueConflict"
SETTLED_AS = {
    "reschedule": (Status.PENDING,),
    "reject": (Status.CANCELLED,),
    "raise": (Status.PENDING, Status.FAILED),
}


OVERLAP = 1.0
"""Seconds two holders' spans must overlap on the store's clock, besides in the
log's order, to count as two holders: on PostgreSQL the log is in the order
events were inserted, not committed, and a transaction that waited for a lock
being given up inserted its event before the other committed (its time, its
transaction's start, is earlier too)."""


@dataclass(frozen=True, slots=True)
class Span:
    """A task holding its lock, from one position of the log to another (and
    from one time of the store's clock to another)."""

    task: str
    taken: float
    given_up: float
    taken_at: float = -math.inf
    given_up_at: float = math.inf


def unique_tasks(ev: Evidence) -> dict[str, Task]:
    return {i: t for i, t in ev.tasks.items() if rule_of(t.name) is not None}


def locks(ev: Evidence, _: Bounds, out: Result) -> None:
    found = unique_tasks(ev)
    position = _positions(ev)
    settled = {i: settled_starts(ev.events.get(i, [])) for i in found}
    spans: dict[tuple[str, str], list[Span]] = defaultdict(list)
    for task_id, task in found.items():
        lock = (task.name, task.unique_key or "")
        spans[lock] += _spans(task, ev.events.get(task_id, []), settled[task_id], position)
        _strategy(task, ev.events.get(task_id, []), settled[task_id], out)
    for (name, key), held in spans.items():
        _one_holder(name, key, held, out)
    _rolled_back(ev, out)
    _finals(found, out)
    out.figures.unique_keys = len(spans)
    for task_id, starts in settled.items():
        strategy = (rule_of(found[task_id].name) or ("", ""))[1]
        out.figures.settled[strategy] = out.figures.settled.get(strategy, 0) + len(starts)


def _positions(ev: Evidence) -> dict[str, float]:
    """Each event's place in the log (by its cursor); by time and id if the
    log's order was not read."""
    if ev.log:
        return {cursor: float(i) for i, cursor in enumerate(ev.log)}
    every = sorted((e for events in ev.events.values() for e in events), key=lambda e: (e.at, e.id))
    return {e.cursor: float(i) for i, e in enumerate(every)}


def _spans(
    task: Task, events: list[Event], settled: list[int], position: dict[str, float]
) -> list[Span]:
    lock, _ = rule_of(task.name) or ("", "")
    marks = [(position.get(e.cursor, math.nan), e.at.timestamp()) for e in events]
    marks.append((math.inf, math.inf))  # never given up
    if lock == "while_executing":
        return [
            Span(task.id, marks[i][0], marks[i + 1][0], marks[i][1], marks[i + 1][1])
            for i, e in enumerate(events)
            if e.to_status is Status.RUNNING and i not in settled
        ]
    created = next((i for i, e in enumerate(events) if e.from_status is None), None)
    if created is None:
        return []
    ends = ENDED if lock == "until_executed" else (*ENDED, Status.RUNNING)
    left = next((i for i, e in enumerate(events) if e.to_status in ends), len(events))
    return [Span(task.id, marks[created][0], marks[left][0], marks[created][1], marks[left][1])]


def _one_holder(name: str, key: str, held: list[Span], out: Result) -> None:
    ordered = sorted(held, key=lambda s: s.taken)
    holder: Span | None = None
    for span in ordered:
        if holder is not None and span.taken < holder.given_up and _together(span, holder):
            out.add(
                "L1",
                span.task,
                f"took the lock of {name} key {key[:12]} while task {holder.task} held it",
            )
        if holder is None or span.given_up > holder.given_up:
            holder = span


def _together(one: Span, other: Span) -> bool:
    """Whether both held the lock for more than :data:`OVERLAP` on the store's clock."""
    return min(one.given_up_at, other.given_up_at) - max(one.taken_at, other.taken_at) > OVERLAP


def _strategy(task: Task, events: list[Event], settled: list[int], out: Result) -> None:
    lock, strategy = rule_of(task.name) or ("", "")
    for i in settled:
        start, after = events[i], events[i + 1]
        if lock != "while_executing":
            out.add("L3", task.id, f"a start of an {lock} task was settled by its lock")
        elif after.to_status not in SETTLED_AS.get(strategy, ()):
            out.add("L3", task.id, f"{strategy} at start went {after.to_status}")
        elif strategy == "reschedule" and after.attempt != start.attempt - 1:
            out.add("L3", task.id, f"rescheduled at attempt {start.attempt}, left {after.attempt}")
        elif strategy == "raise" and after.attempt != start.attempt:
            out.add("L3", task.id, f"raise at start left attempt {after.attempt}")
    last_settled = settled and settled[-1] == len(events) - 2
    if strategy in ("reject", "raise") and task.status in (Status.CANCELLED, Status.FAILED):
        error = task.error.type if task.error is not None else None
        if last_settled and error != CONFLICT:
            out.add("L3", task.id, f"{task.status} by its lock, with error {error}")
    if strategy == "reschedule" and task.error is not None and task.error.type == CONFLICT:
        out.add("L3", task.id, f"a task to reschedule ended {task.status} by its lock")


def _rolled_back(ev: Evidence, out: Result) -> None:
    for task_id in {*ev.tasks, *ev.events}:
        if task_id.startswith(ROLLED_BACK):
            out.add("L2", task_id, "enqueued in a transaction that was rolled back, yet stored")


def _finals(found: dict[str, Task], out: Result) -> None:
    keys = {(t.name, t.unique_key) for t in found.values() if not t.id.startswith(FINAL)}
    finals = {(t.name, t.unique_key): t for t in found.values() if t.id.startswith(FINAL)}
    for name, key in sorted(keys, key=str):
        final = finals.get((name, key))
        if final is None:
            out.add("L4", None, f"no last task of {name} key {(key or '')[:12]}: a lock was left")
        elif final.status is not Status.DONE:
            out.add("L4", final.id, f"the last task of {name} ended {final.status}")


CHECKS = (Check("locks", ("L1", "L2", "L3", "L4"), locks),)
