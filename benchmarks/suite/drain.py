"""Drain throughput: a backlog of no-op tasks, then real worker processes.

The clock is the benchmark's, outside the workers: it starts when polling the
store first sees a task taken (so the workers' start-up is not counted; it is
recorded apart) and stops when it sees the last one done.

The two-worker drain is measured again with a limit on the topic (one it never
reaches), beside the one without: what counting a topic's running tasks under
its lock costs every reservation.
"""

from __future__ import annotations

import time

from benchmarks.suite.app import TOPIC, bench_app
from benchmarks.suite.config import Plan
from benchmarks.suite.metrics import Metric
from benchmarks.suite.processes import bench_workers, wait_until
from benchmarks.suite.target import Target
from tenure.store import Store
from tenure.task import Status

CHUNK = 1_000
"""Tasks per ``enqueue_many`` while filling the backlog."""

POLL = 0.05
"""Seconds between the benchmark's counts: often enough for drains that last
seconds, rare enough to take little of the machine from the workers."""


def measure(target: Target, plan: Plan) -> list[Metric]:
    return [
        backlog(target, plan, 1),
        backlog(target, plan, 2),
        backlog(target, plan, 2, limited=True),
    ]


UNREACHED = 100_000
"""The topic's limit in the limited drain: far above what the workers hold."""


def backlog(target: Target, plan: Plan, workers: int, *, limited: bool = False) -> Metric:
    count = plan.sizes.drain
    samples: list[float] = []
    startups: list[float] = []
    said = " under a topic limit" if limited else ""
    for run in range(1, plan.repeat + 1):
        startup, seconds = _drain_once(target.fresh(), count, workers, limited)
        samples.append(count / seconds)
        startups.append(startup)
        plan.say(
            f"drain {count:,} with {workers} worker(s){said}, run {run}: "
            f"{samples[-1]:,.0f} tasks/s "
            f"({seconds:.2f} s, first task taken {startup:.2f} s after the start)"
        )
    return Metric(
        f"drain.workers_{workers}" + ("_topic_limit" if limited else ""),
        f"drain {count:,}, {workers} worker process{'es' if workers > 1 else ''}{said}",
        "tasks/s",
        True,
        samples,
        {"tasks": count, "workers": workers, "startup_seconds": startups, "limited": limited},
    )


def _drain_once(url: str, count: int, workers: int, limited: bool) -> tuple[float, float]:
    """(seconds from spawning to the first task taken, seconds from then to the
    last task done)."""
    app, noop = bench_app(url)
    for first in range(0, count, CHUNK):
        noop.enqueue_many([()] * min(CHUNK, count - first))
    store = app.store
    if limited:
        store.topic_limit(TOPIC, UNREACHED)
    try:
        spawned = time.perf_counter()
        with bench_workers(url, workers) as running:
            began = wait_until(
                lambda: _count(store, Status.PENDING) < count,
                "a worker takes a task",
                workers=running,
                interval=POLL,
            )
            ended = wait_until(
                lambda: _count(store, Status.DONE) >= count,
                f"all {count:,} tasks are done",
                workers=running,
                interval=POLL,
            )
    finally:
        app.close()
    return began - spawned, ended - began


def _count(store: Store, status: Status) -> int:
    """From the store's tallies, as a user watches a queue: counting the tasks
    table on every poll would read the whole backlog each time, a load on the
    database that the workers being measured then share."""
    return store.task_stats().total(status)
