"""The scheduler-election scenario's checks (:data:`CHECKS`),
over the periodic task of :mod:`chaos.election`.

- **S** every periodic slot enqueued exactly once: the slots' tasks in the
  store follow one another :data:`~chaos.election.SLOT` apart with none
  missing, each was created once (one creation in the event log), and every
  fault on a leader falls between the first slot and the last (the slots went
  on across each failover).
- **E** failover: after each elected scheduler was killed or paused, another
  was elected within leader lease + one cycle (+ ``bounds.slack`` for the
  harness's look at the store), measured from the fault to when the harness saw
  the new leader (``elected`` in the fault log).
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

from chaos.election import SLOT, slot_of
from chaos.evidence import Evidence, Life
from chaos.verdict import Check

if TYPE_CHECKING:
    from chaos.verdict import Bounds, Result


def slots(ev: Evidence, _: Bounds, out: Result) -> None:
    found = sorted((at, task_id) for task_id in ev.tasks if (at := slot_of(task_id)) is not None)
    out.figures.slots = len(found)
    if not found:
        if ev.elections:
            out.add("S", None, "no periodic slot was enqueued")
        return
    for (before, _old), (after, task_id) in pairwise(found):
        missing = round((after - before) / SLOT) - 1
        if missing > 0:
            out.figures.missing_slots += missing
            out.add("S", task_id, f"{missing} slot(s) missing before this one")
    for _at, task_id in found:
        created = sum(1 for e in ev.events.get(task_id, []) if e.from_status is None)
        if created != 1:
            out.add("S", task_id, f"slot created {created} times in the event log")
    first, last = found[0][0], found[-1][0]
    for life in _schedulers(ev):
        for at in _faults_store_at(life):
            if not first <= at <= last:
                out.add("S", None, f"no slot enqueued after the fault on pid {life.pid}")


def failovers(ev: Evidence, bounds: Bounds, out: Result) -> None:
    within = bounds.leader_lease + bounds.cycle + bounds.slack
    for deposed, elected, seen in ev.elections:
        life = next((x for x in reversed(ev.lives) if x.pid == deposed), None)
        faulted = _fault_before(life, seen) if life is not None else None
        if faulted is None:
            out.add("E", None, f"a new leader after pid {deposed}, which had no fault")
            continue
        took = seen - faulted
        out.figures.failover.append(took)
        if took > within:
            out.add(
                "E",
                None,
                f"pid {elected} elected {took:.2f}s after leader pid {deposed} was "
                f"silenced (bound: leader lease + one cycle, {within:.2f}s)",
            )


def _schedulers(ev: Evidence) -> list[Life]:
    return [life for life in ev.lives if life.role == "scheduler"]


def _faults_store_at(life: Life) -> list[float]:
    moments = [life.killed_store_at] + [at for _, _, at in life.pauses]
    return [at for at in moments if at is not None]


def _fault_before(life: Life, moment: float) -> float | None:
    """The latest kill or SIGSTOP of ``life`` before ``moment`` (mono)."""
    moments = [life.killed] + [stop for stop, _, _ in life.pauses]
    return max((m for m in moments if m is not None and m <= moment), default=None)


CHECKS = (Check("slots", ("S",), slots), Check("failovers", ("E",), failovers))
