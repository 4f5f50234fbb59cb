"""The unique-torture scenario (see :mod:`chaos.scenarios`).

Producer processes (twenty in full) enqueue unique tasks (:mod:`chaos.unique`: every
lock phase with every conflict strategy it allows) on a few keys each, so the
same task is enqueued again and again while its twin waits or runs; a share of
those enqueues is made inside a transaction of the producer's own that it then
rolls back. Meanwhile workers in the middle of a task are SIGKILLed and paused
past their lease in turn, their locks handed on only once the supervisor took
their tasks back. On SQLite they are only killed: in a run this busy, a worker
is often stopped in the middle of a write, and SQLite's one write lock, which
it keeps while stopped, then holds every other process (the supervisor too)
until it resumes (the zombie scenario pauses workers that write far less).
Once everything has drained, every task name and key is enqueued once more
(ids ``final-…``): each must be stored and run, which it cannot be if a lock
outlived its task (L4).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import tenure
from chaos.checker import CORE, Figures
from chaos.checks import unique as checks
from chaos.harness import Harness
from chaos.journal import read_folder
from chaos.producers import Workload
from chaos.scenarios.base import Context, Plan, Scenario, found, tasks
from chaos.unique import FINAL, declare_unique, name_of
from tenure.errors import TenureError

STARTUP = 90.0
"""Seconds to wait for a worker in the middle of a task: twenty producer
processes take a while to start on a busy machine."""
CONTENDED = 1.5
"""Seconds each of the two contended twins runs (see :func:`_contend`)."""


def torture(harness: Harness, context: Context) -> None:
    plan = context.plan
    _contend(harness)
    harness.produce(plan.workloads)
    for index in range(plan.faults):
        context.interval()
        busy = found(harness, lambda: harness.holders(left=0.05), timeout=STARTUP)
        if not busy:
            break  # the queue ran dry
        pid = context.rng.choice(busy)
        if index % 2 == 0 or harness.setup.url.startswith("sqlite"):
            harness.kill(pid)
        else:
            harness.pause(pid)
            context.wait(3 * plan.lease)
            harness.resume(pid)
    harness.settle(plan.drain)
    _last_of_each(harness, plan.workloads[0].keys)


def _contend(harness: Harness) -> None:
    """Enqueue two long ``while_executing``/``reschedule`` tasks on one key at
    once: whichever starts second finds the lock held, so the run settles some
    starts by a reschedule for certain, not by the luck of the producers' timing
    (on a loaded machine, short twins seldom overlap)."""
    app = tenure.App(harness.setup.url)
    try:
        twin = declare_unique(app)[name_of("while_executing", "reschedule")]
        for _ in range(2):
            twin.enqueue(0, CONTENDED)
    finally:
        app.close()


def _last_of_each(harness: Harness, keys: int) -> None:
    """Enqueue every task name on every key once more, now that nothing holds a lock."""
    app = tenure.App(harness.setup.url)
    try:
        for name, function in sorted(declare_unique(app).items()):
            for key in range(keys):
                task_id = f"{FINAL}{name}-{key}"
                try:
                    handle = function.options(id=task_id).enqueue(key, 0.0)
                except TenureError as exc:
                    harness.faults.write("final-refused", id=task_id, error=str(exc)[:200])
                    continue
                if handle.rejected is not None:
                    harness.faults.write("final-refused", id=task_id, error=str(handle.rejected))
    finally:
        app.close()


def figures(journals: Path, f: Figures) -> str:
    """The scenario's own figures: locks contended for, starts settled by a
    held lock (per strategy), and what the producers' enqueues came to (while
    the run's journals are kept)."""
    shown = f" keys {f.unique_keys} settled {_kinds(f.settled)}"
    if not journals.is_dir():
        return shown  # removed after a clean run: the producers' counts are gone
    counts = Counter(r["k"] for r in read_folder(journals).records)
    return shown + (
        f" enqueued {counts['enq']}"
        f" rejected {counts['enq-rejected']} raised {counts['enq-raised']}"
        f" rolled-back {counts['rolled-back']} errors {counts['enq-error']}"
        f" final-refused {counts['final-refused']}"
    )


def _kinds(counts: dict[str, int]) -> str:
    return ",".join(f"{kind}:{n}" for kind, n in sorted(counts.items())) or "-"


def _producers(
    producers: int, count: int, keys: int, seed: int, rate: float
) -> tuple[Workload, ...]:
    return tuple(
        tasks(
            count,
            seed + i,
            keys=keys,
            rollback=0.15,
            durations=(0.05, 0.3),
            rate=rate,
            flaky=0,
            doomed=0,
        )
        for i in range(producers)
    )


APP = "chaos.unique:app"
UNIQUE = {
    "full": Plan(
        workers=4,
        concurrency=4,
        workloads=_producers(20, 200, 50, 51, rate=4.0),
        faults=10,
        every=(2.0, 4.0),
    ),
    "quick": Plan(
        workers=3,
        concurrency=4,
        workloads=_producers(10, 30, 8, 51, rate=5.0),
        faults=2,
        every=(1.0, 2.0),
        drain=120,
    ),
}
SCENARIO = Scenario(
    "unique-torture", UNIQUE, torture, app=APP, checks=(*CORE, *checks.CHECKS), figures=figures
)
