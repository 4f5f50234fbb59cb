"""Pickup latency: how long a task waits before an idle worker starts it.

One worker runs and has gone idle; tasks are enqueued one at a time, a fixed
gap apart. Each task's wait is read from the store afterwards: ``started_at``
minus ``created_at``, both written by one clock (the database server's on
PostgreSQL, this machine's on SQLite), so no two clocks are compared.
"""

from __future__ import annotations

import time

from benchmarks.suite import BenchError
from benchmarks.suite.app import bench_app
from benchmarks.suite.config import Plan
from benchmarks.suite.metrics import Metric, percentiles
from benchmarks.suite.processes import bench_workers, wait_until
from benchmarks.suite.target import Target
from tenure.store import Store
from tenure.task import Status

WANTED = (50, 95, 99)
SETTLE = 0.5
"""Seconds the worker is left alone after its warm-up task, so it is idle
(waiting for a notification or its next poll) when the measured tasks come."""


def measure(target: Target, plan: Plan) -> list[Metric]:
    runs = []
    for run in range(1, plan.repeat + 1):
        waits = _waits(target.fresh(), plan.sizes.pickup, plan.sizes.pickup_gap)
        runs.append(percentiles(waits, WANTED))
        shown = ", ".join(f"p{p} {runs[-1][p]:.1f} ms" for p in WANTED)
        plan.say(f"pickup of {len(waits)} tasks by an idle worker, run {run}: {shown}")
    params = {"tasks": plan.sizes.pickup, "gap_seconds": plan.sizes.pickup_gap, "workers": 1}
    return [
        Metric(
            f"pickup.p{p}",
            f"pickup latency p{p}, enqueue→start",
            "ms",
            False,
            [found[p] for found in runs],
            params,
        )
        for p in WANTED
    ]


def _waits(url: str, count: int, gap: float) -> list[float]:
    """Milliseconds from creation to start of ``count`` tasks enqueued ``gap`` apart."""
    app, noop = bench_app(url)
    store = app.store
    try:
        with bench_workers(url, 1) as running:
            warm_up = noop.enqueue().id
            wait_until(lambda: _done(store, [warm_up]), "the warm-up task is done", workers=running)
            time.sleep(SETTLE)
            begin = time.perf_counter()
            ids = []
            for index in range(count):
                time.sleep(max(0.0, begin + index * gap - time.perf_counter()))
                ids.append(noop.enqueue().id)
            wait_until(lambda: _done(store, ids), f"{count} tasks are done", workers=running)
        return [_wait_ms(store, task_id) for task_id in ids]
    finally:
        app.close()


def _done(store: Store, ids: list[str]) -> bool:
    last = store.task_get(ids[-1])
    if last is None or last.status is not Status.DONE:
        return False  # the common case while waiting: one query
    return all((t := store.task_get(i)) is not None and t.status is Status.DONE for i in ids)


def _wait_ms(store: Store, task_id: str) -> float:
    task = store.task_get(task_id)
    if task is None or task.created_at is None or task.started_at is None:
        raise BenchError(f"task {task_id} has no start time")
    return (task.started_at - task.created_at).total_seconds() * 1000
