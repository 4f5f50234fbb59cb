"""Reserve cost against a long history: does a store full of finished tasks slow
down taking the next one?

For each history size the store is loaded once with that many done tasks (one
SQL statement, then what autovacuum or checkpoints would have done). Each
repetition then enqueues a small pending set and times single-task
``task_reserve`` calls, one after another, as a worker's fetch loop makes them;
the reserved tasks are completed afterwards and join the history.
"""

from __future__ import annotations

import time

from benchmarks.suite.app import TOPIC, bench_app
from benchmarks.suite.config import Plan
from benchmarks.suite.metrics import Metric, percentiles
from benchmarks.suite.target import Target
from tenure.store import Completion, Lease, ReserveParams, Store

OWNER = "bench-reserver"


def measure(target: Target, plan: Plan) -> list[Metric]:
    return [history(target, plan, finished) for finished in plan.sizes.histories]


def history(target: Target, plan: Plan, finished: int) -> Metric:
    calls = plan.sizes.reserve_calls
    url = target.fresh()
    loaded = time.perf_counter()
    target.load_finished(finished)
    load_seconds = time.perf_counter() - loaded
    plan.say(f"loaded {finished:,} finished tasks in {load_seconds:.1f} s")
    app, noop = bench_app(url)
    store = app.store
    samples: list[float] = []
    latencies: list[dict[str, float]] = []
    try:
        for run in range(1, plan.repeat + 1):
            noop.enqueue_many([()] * calls)
            seconds = _reserve_each(store, calls)
            samples.append(calls / sum(seconds))
            found = percentiles(seconds, (50, 99))
            latencies.append({f"p{p}_ms": value * 1000 for p, value in found.items()})
            plan.say(
                f"reserve with {finished:,} finished, run {run}: {samples[-1]:,.0f} calls/s "
                f"(p50 {latencies[-1]['p50_ms']:.2f} ms)"
            )
    finally:
        app.close()
    return Metric(
        f"reserve.history_{finished}",
        f"reserve 1 task, {finished:,} finished in store",
        "calls/s",
        True,
        samples,
        {"finished": finished, "calls": calls, "load_seconds": load_seconds, "latency": latencies},
    )


def _reserve_each(store: Store, calls: int) -> list[float]:
    """Seconds taken by each of ``calls`` single-task reserves; then completes them."""
    params = ReserveParams(owner=OWNER, topics=[TOPIC], limit=1)
    seconds = []
    leases = []
    for _ in range(calls):
        started = time.perf_counter()
        [task] = store.task_reserve(params)
        seconds.append(time.perf_counter() - started)
        leases.append(Lease(task.id, OWNER, task.lease_token or 0))
    store.task_complete_many([Completion(lease) for lease in leases])
    return seconds
