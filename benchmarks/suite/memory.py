"""A worker's resident memory over a long drain: it must stay flat.

One worker process drains a backlog of ``memory_drain`` no-op tasks (a million
in a full run) while the benchmark reads its resident set size from
``/proc/<pid>/status`` every half second, and counts the tasks done every five
(a count over a million rows is a long statement; run often, its snapshot
would keep the store from reclaiming the rows the drain leaves behind, and
slow the very drain it watches). The baseline is the size once a tenth
of the backlog is done (imports, pools, caches and the first batches settled);
the measurement is how far above the baseline the size went afterwards, in
percent. It runs once, not per repetition: a million tasks take minutes, and
memory does not jitter as timings do.
"""

from __future__ import annotations

import time
from pathlib import Path

from benchmarks.suite import BenchError
from benchmarks.suite.app import bench_app
from benchmarks.suite.config import Plan
from benchmarks.suite.drain import CHUNK
from benchmarks.suite.metrics import Metric
from benchmarks.suite.processes import bench_workers
from benchmarks.suite.target import Target
from tenure.store import TaskFilter
from tenure.task import Status

SAMPLE_EVERY = 0.5
"""Seconds between two readings of the worker's memory."""
COUNT_EVERY = 5.0
"""Seconds between two counts of the tasks done."""
WARM_UP = 0.1
"""Fraction of the backlog done before the baseline is taken."""
TIMEOUT = 3600.0


def measure(target: Target, plan: Plan) -> list[Metric]:
    count = plan.sizes.memory_drain
    readings = _drain_watched(target.fresh(), count)
    baseline = next(rss for done, rss in readings if done >= count * WARM_UP)
    after = [rss for done, rss in readings if done >= count * WARM_UP]
    growth = (max(after) - baseline) / baseline * 100
    plan.say(
        f"memory over a drain of {count:,}: {baseline / 1024:.1f} MiB once warm, "
        f"at most {max(after) / 1024:.1f} MiB after, {growth:+.1f}%"
    )
    params = {
        "tasks": count,
        "baseline_kib": baseline,
        "max_kib": max(after),
        "final_kib": after[-1],
        "readings": [[done, rss] for done, rss in readings],
    }
    return [
        Metric(
            "memory.growth", f"worker memory growth over {count:,}", "%", False, [growth], params
        ),
        Metric("memory.rss", "worker resident memory, warm", "MiB", False, [baseline / 1024]),
    ]


def _drain_watched(url: str, count: int) -> list[tuple[int, int]]:
    """(tasks done, worker RSS in KiB) every ``SAMPLE_EVERY`` seconds until all are done."""
    app, noop = bench_app(url)
    for first in range(0, count, CHUNK):
        noop.enqueue_many([()] * min(CHUNK, count - first))
    store = app.store
    readings: list[tuple[int, int]] = []
    deadline = time.monotonic() + TIMEOUT
    try:
        with bench_workers(url, 1) as running:
            [pid] = running.pids
            done, next_count = 0, 0.0
            while done < count:
                if time.monotonic() > deadline:
                    raise BenchError(f"the memory drain did not end within {TIMEOUT:.0f} s")
                running.check()
                time.sleep(SAMPLE_EVERY)
                if time.monotonic() >= next_count:
                    done = store.task_count(TaskFilter(status=Status.DONE))
                    next_count = time.monotonic() + COUNT_EVERY
                readings.append((done, resident_kib(pid)))
    finally:
        app.close()
    return readings


def resident_kib(pid: int) -> int:
    """The resident set size of process ``pid``, in KiB (Linux's /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise BenchError(f"no VmRSS for process {pid}")
