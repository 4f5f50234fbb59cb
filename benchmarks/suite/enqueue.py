"""Enqueue throughput through the public task API, from one process.

One call per task (``noop.enqueue()``: one transaction each) and one bulk call
(``noop.enqueue_many``: one transaction for all). Each repetition uses a fresh
store, and the App's first call, which opens the store, is made before the clock
starts.
"""

from __future__ import annotations

import time

from benchmarks.suite.app import bench_app
from benchmarks.suite.config import Plan
from benchmarks.suite.metrics import Metric
from benchmarks.suite.target import Target


def measure(target: Target, plan: Plan) -> list[Metric]:
    return [single(target, plan), bulk(target, plan)]


def single(target: Target, plan: Plan) -> Metric:
    count = plan.sizes.enqueue_single
    samples = []
    for run in range(1, plan.repeat + 1):
        app, noop = bench_app(target.fresh())
        noop.enqueue()
        started = time.perf_counter()
        for _ in range(count):
            noop.enqueue()
        samples.append(count / (time.perf_counter() - started))
        app.close()
        plan.say(f"enqueue {count:,} one by one, run {run}: {samples[-1]:,.0f} tasks/s")
    return Metric(
        "enqueue.single",
        f"enqueue, 1 call per task ({count:,})",
        "tasks/s",
        True,
        samples,
        {"tasks": count},
    )


def bulk(target: Target, plan: Plan) -> Metric:
    count = plan.sizes.enqueue_bulk
    calls = [()] * count
    samples = []
    for run in range(1, plan.repeat + 1):
        app, noop = bench_app(target.fresh())
        noop.enqueue()
        started = time.perf_counter()
        noop.enqueue_many(calls)
        samples.append(count / (time.perf_counter() - started))
        app.close()
        plan.say(f"enqueue_many of {count:,}, run {run}: {samples[-1]:,.0f} tasks/s")
    return Metric(
        "enqueue.bulk",
        f"enqueue_many, 1 call of {count:,}",
        "tasks/s",
        True,
        samples,
        {"tasks": count},
    )
