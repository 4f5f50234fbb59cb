"""The clock-skew scenario (see :mod:`chaos.scenarios`): workers whose wall
clocks are two hours off either way, one clock jumping mid-run, then the
scheduler (the lease supervisor) skewed, with skewed owners SIGKILLed in each
stage so that recovery (I8, I9) is measured under every skew.

libfaketime is preloaded into each skewed process (:mod:`chaos.skew`); a
killed worker comes back with the clock of the one it replaces. On SQLite every
process writes its own wall clock into the store, so the kills carry no store
time there and recovery is measured on the monotonic clock only (I9,
:mod:`chaos.checks.reruns`); on PostgreSQL the store's times are the server's, and I8
applies too.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path

from chaos import ChaosError
from chaos.checker import CORE
from chaos.checks import reruns
from chaos.checks import skew as checks
from chaos.harness import Harness, Placement
from chaos.journal import monotonic
from chaos.scenarios.base import Context, Plan, Scenario, found, tasks
from chaos.skew import CLOCK, Clocks, skewed

READY = 60.0
"""Seconds every worker gets to start its first task."""
WORKERS = (("worker-0", "-2h"), ("worker-1", "+2h"), ("worker-2", None))
"""Each worker's clock at the start (None: the machine's own)."""
JUMP = ("worker-0", "+1h")
"""Mid-run, worker-0's clock jumps three hours forward (forward only: on SQLite a
task's delay is written by the clock of the worker that retries it, and a clock
going back would wait out the difference)."""
SCHEDULER = "+2h"


def skew(harness: Harness, context: Context) -> None:
    clocks = Clocks(harness.setup.folder / "clocks")
    stamp = not harness.setup.url.startswith("sqlite")
    _start(harness, clocks)
    stop = harness.setup.folder / "stop-producers"  # work goes on until the last kill
    harness.produce(replace(w, until=str(stop)) for w in context.plan.workloads)
    try:
        began = monotonic()
        harness.wait_for(
            lambda: set(harness.workers()) <= harness.started_since(began),
            "every skewed worker starting a task",
            READY,
        )
        _kills(harness, context, stamp)
        name, offset = JUMP
        _change(harness, clocks, name, offset, f"{name} jumps to {offset}")
        _kills(harness, context, stamp)
        _change(harness, clocks, "scheduler", SCHEDULER, f"scheduler {SCHEDULER}")
        context.wait(4 * context.plan.cycle)  # a few cycles on the moved clock
        _kills(harness, context, stamp)
    finally:
        stop.touch()


def _start(harness: Harness, clocks: Clocks) -> None:
    """The scheduler and the workers again, each on its own clock."""
    harness.retire("scheduler")
    pids = [harness.spawn("scheduler", clocks.place("scheduler", "+0"))]
    for name, offset in WORKERS:
        if offset is None:
            harness.spawn("worker", Placement())
            continue
        pids.append(harness.spawn("worker", clocks.place(name, offset)))
        harness.faults.write("phase", name=f"{CLOCK}{name} {offset}")
    harness.wait_for(lambda: all(map(skewed, pids)), "libfaketime loaded in the skewed", 30)
    harness.wait_for(lambda: harness.leader() is not None, "the skewed scheduler elected", 30)


def _change(harness: Harness, clocks: Clocks, name: str, offset: str, said: str) -> None:
    harness.faults.write("phase", name=f"{CLOCK}{said}")
    clocks.move(name, offset)


def _kills(harness: Harness, context: Context, stamp: bool) -> None:
    """``plan.faults`` kills of skewed workers in the middle of a task, in turn."""
    skewed_names = [name for name, offset in WORKERS if offset]
    for number in range(context.plan.faults):
        context.interval()
        name = skewed_names[number % len(skewed_names)]
        busy = found(harness, partial(_holders_on, harness, name))
        if not busy:
            raise ChaosError(f"no task left to kill {name} in the middle of")
        harness.kill(busy[0], stamp=stamp)


def _holders_on(harness: Harness, name: str) -> list[int]:
    """Workers on clock ``name`` in the middle of a task with a while still to run."""
    return [pid for pid in harness.holders(left=0.3) if clock_of(pid) == name]


def clock_of(pid: int) -> str | None:
    """The name of the clock process ``pid`` runs on (None: the machine's)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for item in environ:
        if item.startswith(b"FAKETIME_TIMESTAMP_FILE="):
            return Path(item.decode().partition("=")[2]).stem
    return None


SKEWED = {"durations": (0.1, 0.6), "flaky": 0.05, "doomed": 0.0}
SKEW = {
    "full": Plan(
        workers=0,
        concurrency=8,
        workloads=(tasks(5000, 41, rate=10, **SKEWED), tasks(5000, 42, rate=10, **SKEWED)),
        faults=6,
        every=(4.0, 7.0),
    ),
    "quick": Plan(
        workers=0,
        concurrency=8,
        workloads=(tasks(1000, 41, rate=12, **SKEWED),),
        faults=1,
        every=(1.0, 1.5),
        drain=120,
    ),
}
"""Producers go on until the last kill is over: counts are at most. Workers
start with the scenario (``workers=0``: the harness's own would run
on the machine's clock). Tasks come slower than one worker of 8 slots takes
them, so a task taken back is run again at once: I9 is measured up to its run
elsewhere, with no queue to wait in."""
SCENARIO = Scenario("clock-skew", SKEW, skew, checks=(*CORE, *checks.CHECKS, *reruns.CHECKS))
