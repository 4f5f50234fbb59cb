"""I9: the executions of a worker silenced by a fault that the store's clock
cannot time, a kill under skewed clocks (:mod:`chaos.skew`) or its host cut
off from the store (:mod:`chaos.checks.partition`), run again elsewhere in time,
measured on the monotonic clock (:data:`CHECKS`).

I8 times a silenced owner's tasks on the store's clock, from the fault to each
task's next transition. The store's own times cannot measure this under skew
on SQLite, where each process writes its own wall clock into the event log
(the scenario's kills carry no store time there, so I8 leaves them out), nor a
cut-off worker, whose fault reaches the store only as silence. I9 measures it
from the harness's side instead:

- every execution in flight on a worker when it was killed in a run whose
  clocks were moved, or on a worker when its host was cut off, runs again,
  under a newer token, within lease + supervisor cycle + poll (+ margin) of
  the kill or cut, unless its task had used up its attempts (or the next owner
  it was given was lost before it began, which I4 judges). On SQLite a retry's
  delay is written by the clock of the worker that failed the attempt before:
  a task taken back from such a retry waits until some worker's clock reaches
  it (tenure's documented SQLite behaviour), so those are left out of this
  measure there (I1 still holds them to finishing).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from chaos.checks.partition import cuts, in_flight_at
from chaos.checks.skew import changes
from chaos.evidence import Evidence, Execution, owner_pid, reservations
from chaos.verdict import Check
from tenure.task import Status

if TYPE_CHECKING:
    from chaos.verdict import Bounds, Result


def reruns(ev: Evidence, bounds: Bounds, out: Result) -> None:
    if changes(ev):
        for life in ev.lives:
            if life.role == "worker" and life.killed is not None:
                in_flight = [
                    run
                    for runs in ev.executions.values()
                    for run in runs
                    if run.pid == life.pid
                    and life.spawned <= run.start <= life.killed
                    and run.end is None
                    and not (life.killed_store_at is None and _delayed(ev, run))
                ]
                what = f"pid {life.pid} was killed"
                _again(ev, bounds, out, in_flight, moment=life.killed, what=what)
    for pid, cut, _ in cuts(ev):
        what = f"pid {pid} was cut off"
        _again(ev, bounds, out, in_flight_at(ev, pid, cut), moment=cut, what=what)


def _delayed(ev: Evidence, run: Execution) -> bool:
    """Whether ``run`` is a retry after a failed attempt: the task's delay (its
    ``run_at``) was written by the clock of the worker that failed it."""
    return any(r.token < run.token and r.outcome == "raise" for r in ev.executions[run.task])


def _next_grant_unstarted(ev: Evidence, run: Execution, moment: float, within: float) -> bool:
    """Whether the task's next reservation after ``run`` never began, its owner
    killed in turn (or exited) within ``within`` seconds of ``moment``."""
    granted = [
        e for e in reservations(ev.events.get(run.task, [])) if (e.attempt or 0) > run.attempt
    ]
    if not granted:
        return False
    following = min(granted, key=lambda e: e.attempt or 0)
    if any(r.attempt == following.attempt for r in ev.executions.get(run.task, [])):
        return False
    pid = owner_pid(following.owner)
    return any(
        life.pid == pid
        and (life.exited is not None or moment <= (life.killed or -math.inf) <= moment + within)
        for life in ev.lives
    )


def _again(
    ev: Evidence,
    bounds: Bounds,
    out: Result,
    in_flight: list[Execution],
    *,
    moment: float,
    what: str,
) -> None:
    """Each of ``in_flight`` runs again under a newer token within
    ``bounds.recovery`` of ``moment`` (monotonic), when ``what`` happened."""
    for run in in_flight:
        later = [r.start for r in ev.executions.get(run.task, []) if r.token > run.token]
        if _next_grant_unstarted(ev, run, moment, 2 * bounds.recovery):
            continue  # its next owner was lost too (I4 judges that grant)
        if not later:
            task = ev.tasks.get(run.task)
            if task is None or task.status is Status.FAILED:
                continue  # I2 names a task missing; a failed one used up its attempts
            if task.status is Status.DONE and task.lease_token == run.token:
                continue  # its ending reached the store before the fault
            out.add("I9", run.task, f"token {run.token} never ran again after {what}")
            continue
        took = min(later) - moment
        out.figures.rerun.append(took)
        if took > bounds.recovery:
            out.add(
                "I9",
                run.task,
                f"ran again {took:.2f}s after {what} (bound {bounds.recovery:.2f}s, "
                "on the monotonic clock)",
            )


CHECKS = (Check("reruns", ("I9",), reruns),)
