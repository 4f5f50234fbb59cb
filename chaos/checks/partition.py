"""The partition scenario's checks (:data:`CHECKS`).

The scenario writes each cut as a ``phase`` of the fault log named ``cut PID``
and its end as ``heal PID`` (PID: the worker of the host cut off). That every
execution in flight on the cut-off worker at the cut runs again elsewhere in
time is I9's (:mod:`chaos.checks.reruns`).

- **N** fencing across the partition: no ending of the cut-off worker is
  accepted while it is cut off (from ``bounds.slack`` after the cut), and none
  after the heal for an execution whose task has run under a newer token
  since; each execution it had in flight ended (it gave it up) by one
  keepalive interval after the heal at the latest; it starts no execution
  under a token older than one already run elsewhere; every cut is healed;
  and the worker starts a task again by itself within
  ``bounds.server_recovery`` of the heal.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from chaos.evidence import Evidence, Execution
from chaos.verdict import Check

if TYPE_CHECKING:
    from chaos.verdict import Bounds, Result


def cuts(ev: Evidence) -> list[tuple[int, float, float | None]]:
    """(pid, cut, heal) of each cut, in monotonic seconds (heal None: never)."""
    found: list[tuple[int, float, float | None]] = []
    for name, at in ev.phases:
        kind, _, pid = name.partition(" ")
        if kind == "cut" and pid.isdigit():
            found.append((int(pid), at, None))
        elif kind == "heal" and pid.isdigit():
            for index, (cut_pid, cut, heal) in enumerate(found):
                if cut_pid == int(pid) and heal is None:
                    found[index] = (cut_pid, cut, at)
    return found


def in_flight_at(ev: Evidence, pid: int, cut: float) -> list[Execution]:
    """The executions worker ``pid`` had in flight at the cut (monotonic)."""
    return [
        run
        for runs in ev.executions.values()
        for run in runs
        if run.pid == pid and run.start <= cut and (run.end is None or run.end > cut)
    ]


def partitions(ev: Evidence, bounds: Bounds, out: Result) -> None:
    for pid, cut, heal in cuts(ev):
        out.figures.cuts += 1
        in_flight = in_flight_at(ev, pid, cut)
        if heal is None:
            out.add("N", None, f"pid {pid} was cut off and never healed")
            continue
        _fenced(ev, bounds, out, (pid, cut, heal), in_flight)
        began = [r.start for runs in ev.executions.values() for r in runs if r.pid == pid]
        first = min((start for start in began if start >= heal), default=math.inf)
        out.figures.resume.append(first - heal)
        if first - heal > bounds.server_recovery:
            out.add(
                "N",
                None,
                f"pid {pid} started no task within {bounds.server_recovery:g}s of the heal",
            )


def _fenced(
    ev: Evidence,
    bounds: Bounds,
    out: Result,
    cut: tuple[int, float, float],
    in_flight: list[Execution],
) -> None:
    pid, cut_at, heal = cut
    superseded = {
        (run.task, run.token)
        for run in in_flight
        if any(r.token > run.token for r in ev.executions.get(run.task, []))
    }
    for ack in ev.acks:
        if ack.pid != pid or ack.mono < cut_at + bounds.slack:
            continue  # a write may be answered as the link goes down
        if ack.mono < heal:
            out.add("N", ack.task, f"an ending of token {ack.token} accepted while cut off")
        elif (ack.task, ack.token) in superseded:
            out.add(
                "N",
                ack.task,
                f"an ending of token {ack.token} accepted after the heal, though a newer "
                "token had run",
            )
    for run in (r for runs in ev.executions.values() for r in runs):
        newer = [r.start for r in ev.executions[run.task] if r.token > run.token]
        if run.pid == pid and run.start >= cut_at and min(newer, default=math.inf) < run.start:
            out.add(
                "N",
                run.task,
                f"token {run.token} started on the cut-off worker after a newer token had "
                "run elsewhere (a reservation it heard of after its lease had run out)",
            )
    for run in in_flight:
        went_on = (run.end if run.end is not None else math.inf) - heal
        if (run.task, run.token) in superseded and went_on > bounds.keepalive:
            out.add(
                "N",
                run.task,
                f"token {run.token} went on {went_on:.2f}s after the heal, its task run elsewhere",
            )


CHECKS = (Check("partitions", ("N",), partitions),)
