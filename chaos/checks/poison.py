"""The poison scenario's checks (:data:`CHECKS`).

- **D** every poison task (:mod:`chaos.poison`) ended failed after exactly its
  ``max_attempts``: the store counts that many attempts and holds that many
  reservations in its event log, and the poison journal shows each attempt
  number from 1 to the maximum begun exactly once. A death that was not counted
  (an attempt begun twice under one number) or a task retried past its maximum
  (or stopped before it) is named; an attempt granted and never begun is I4's
  (:func:`chaos.checker.check`), as for the probe's tasks.
- **T** healthy tasks keep their pace beside the poison: the throughput of
  probe executions that ran to their end while poison tasks died (phase
  ``poison``) is at least ``bounds.throughput`` of the same workers' throughput
  in the run's own first phase (``baseline``), each measured from the phase's
  first start to its last end.
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from typing import TYPE_CHECKING

from chaos.evidence import Evidence, Execution, reservations
from chaos.poison import NAME
from chaos.verdict import Check
from tenure.task import Status

if TYPE_CHECKING:
    from chaos.verdict import Bounds, Result

DIED = ("exit", "segv", "hang")
"""Kinds whose attempt ends with its process killed or dead."""


def poison_tasks(ev: Evidence) -> set[str]:
    return {task.id for task in ev.tasks.values() if task.name == NAME}


def deaths(ev: Evidence, _: Bounds, out: Result) -> None:
    for task_id in sorted(poison_tasks(ev)):
        task = ev.tasks[task_id]
        wanted = list(range(1, task.max_attempts + 1))
        if task.status is not Status.FAILED or task.attempts != task.max_attempts:
            out.add(
                "D",
                task_id,
                f"{task.status} after {task.attempts} attempts (expected failed after "
                f"{task.max_attempts})",
            )
        begun = sorted(a.attempt for a in ev.poison.get(task_id, []))
        if len(set(begun)) < len(begun) or not set(begun) <= set(wanted):
            out.add("D", task_id, f"attempts begun {begun}, expected {wanted} once each")
        granted = sorted(e.attempt or 0 for e in reservations(ev.events.get(task_id, [])))
        if granted != wanted:
            out.add("D", task_id, f"reservations in the event log {granted}, expected {wanted}")
    attempts = [a for runs in ev.poison.values() for a in runs]
    out.figures.poison = len(poison_tasks(ev))
    out.figures.deaths = sum(1 for a in attempts if a.kind in DIED)
    out.figures.poison_kinds = dict(Counter(a.kind for a in attempts))


def throughput(ev: Evidence, bounds: Bounds, out: Result) -> None:
    names = [name for name, _ in ev.phases]
    if "baseline" not in names or "poison" not in names:
        return
    rates = dict(zip(names, _rates(ev), strict=True))
    before, beside = rates["baseline"], rates["poison"]
    if not before or beside is None:
        out.add("T", None, f"no healthy task ran to its end in a phase ({rates})")
        return
    ratio = beside / before
    out.figures.throughput = (before, beside)
    if ratio < bounds.throughput:
        out.add(
            "T",
            None,
            f"healthy throughput {beside:.1f}/s beside poison tasks, {ratio:.0%} of "
            f"{before:.1f}/s without (floor {bounds.throughput:.0%})",
        )


def _rates(ev: Evidence) -> list[float | None]:
    """Per phase, healthy executions ended per second (None: there were none)."""
    bounds = [at for _, at in ev.phases] + [float("inf")]
    healthy: list[Execution] = [
        run for runs in ev.executions.values() for run in runs if run.outcome == "ok"
    ]
    rates: list[float | None] = []
    for low, high in pairwise(bounds):
        runs = [r for r in healthy if low <= r.start < high and r.end is not None]
        if not runs:
            rates.append(None)
            continue
        span = max(r.end or 0.0 for r in runs) - min(r.start for r in runs)
        rates.append(len(runs) / span if span > 0 else None)
    return rates


CHECKS = (Check("deaths", ("D",), deaths), Check("throughput", ("T",), throughput))
