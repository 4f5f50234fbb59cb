"""Many producers enqueueing one task per call, as a web server's workers do.

Two shapes: 8 threads of one process sharing what that process opened (a
threaded server), and 4 processes with one each (a pre-forking server). Every
producer first makes one enqueue outside the clock (it connects), then all wait
at a barrier and enqueue their share one call at a time; each call is timed on
the producer's own clock. The rate is every task over the time from the
barrier's release to the last producer's end; the latencies are every call's.

What a producer is differs by system, so it is given as a :class:`Source`: the
name of a module-level function and its arguments, which each process (and, for
threads, the one process) calls to get its ``enqueue()``; threads of one process
share what one call made unless the system says each thread needs its own.
This module is shared by ``make bench`` (tenure alone) and ``make bench-compare``.
"""

from __future__ import annotations

import importlib
import multiprocessing
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.suite import BenchError
from benchmarks.suite.app import bench_app
from benchmarks.suite.config import Plan
from benchmarks.suite.metrics import Metric, percentiles
from benchmarks.suite.target import Target

THREADS = 8
PROCESSES = 4
PERCENTILES = (50, 99)
TIMEOUT = 600.0
"""Seconds a run may take before it is called stuck."""

Enqueue = Callable[[], None]


@dataclass(frozen=True, slots=True)
class Source:
    """Where a producer's ``enqueue()`` comes from: ``function`` (``module:name``)
    called with ``args`` returns it. ``per_thread``: threads cannot share one
    (a connection that one thread at a time may use) and each opens its own."""

    function: str
    args: tuple[str, ...]
    per_thread: bool = False

    def open(self) -> Enqueue:
        module, _, name = self.function.partition(":")
        made: Enqueue = getattr(importlib.import_module(module), name)(*self.args)
        return made


@dataclass(frozen=True, slots=True)
class Run:
    """One run: how many tasks, over how long, and each call's latency (ms)."""

    tasks: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rate(self) -> float:
        return self.tasks / self.seconds


def measure(target: Target, plan: Plan) -> list[Metric]:
    """tenure's producers on ``target``: each opens an App with the no-op task."""
    return measure_many(lambda: Source(f"{__name__}:tenure_producer", (target.fresh(),)), plan)


class TenureProducer:
    """An App on ``url`` and its no-op task: call it to enqueue one task."""

    def __init__(self, url: str) -> None:
        self.app, self.noop = bench_app(url)

    def __call__(self) -> None:
        self.noop.enqueue()

    def close(self) -> None:
        self.app.close()


def tenure_producer(url: str) -> TenureProducer:
    return TenureProducer(url)


def measure_many(fresh: Callable[[], Source], plan: Plan) -> list[Metric]:
    """Both shapes, ``plan.repeat`` runs each, each run on a fresh store."""
    count = plan.sizes.enqueue_producers
    metrics: list[Metric] = []
    for shape, producers in (("threads", THREADS), ("processes", PROCESSES)):
        runs = []
        for number in range(1, plan.repeat + 1):
            source = fresh()
            runs.append(
                run_threads(source, producers, count)
                if shape == "threads"
                else run_processes(source, producers, count)
            )
            cuts = percentiles(runs[-1].latencies_ms, PERCENTILES)
            plan.say(
                f"enqueue {count:,} from {producers} {shape}, one call each, run {number}: "
                f"{runs[-1].rate:,.0f} tasks/s, p50 {cuts[50]:.2f} ms, p99 {cuts[99]:.2f} ms"
            )
        metrics += _metrics(shape, producers, count, runs)
    return metrics


def _metrics(shape: str, producers: int, count: int, runs: Sequence[Run]) -> list[Metric]:
    key = f"enqueue.{shape}_{producers}"
    params = {"tasks": count, shape: producers}
    cuts = [percentiles(run.latencies_ms, PERCENTILES) for run in runs]
    label = f"enqueue, {producers} {shape}, 1 per call"
    return [
        Metric(key, f"{label} ({count:,})", "tasks/s", True, [r.rate for r in runs], params),
        *(
            Metric(f"{key}.p{p}", f"{label}: p{p}", "ms", False, [c[p] for c in cuts], params)
            for p in PERCENTILES
        ),
    ]


def run_threads(source: Source, threads: int, count: int) -> Run:
    """``count`` tasks from ``threads`` threads of this process."""
    shared = None if source.per_thread else source.open()
    barrier = threading.Barrier(threads + 1)
    results: list[Any] = [None] * threads

    def produce(index: int) -> None:
        try:
            enqueue = shared or source.open()
            results[index] = _produce(enqueue, _share(count, threads, index), barrier.wait)
            if shared is None:
                close(enqueue)
        except BaseException as exc:  # reported by the measuring thread
            barrier.abort()
            results[index] = exc

    workers = [threading.Thread(target=produce, args=(i,), daemon=True) for i in range(threads)]
    for worker in workers:
        worker.start()
    barrier.wait(TIMEOUT)
    for worker in workers:
        worker.join(TIMEOUT)
    if shared is not None:
        close(shared)
    return _combine(results)


def run_processes(source: Source, processes: int, count: int) -> Run:
    """``count`` tasks from ``processes`` new processes (spawned: nothing inherited)."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes + 1)
    answers = context.Queue()
    children = [
        context.Process(
            target=_child, args=(source, _share(count, processes, i), barrier, answers), daemon=True
        )
        for i in range(processes)
    ]
    for child in children:
        child.start()
    try:
        barrier.wait(TIMEOUT)
        results = [answers.get(timeout=TIMEOUT) for _ in children]
    finally:
        for child in children:
            child.join(10)
            if child.is_alive():
                child.kill()
    return _combine(results)


def _child(source: Source, count: int, barrier: Any, answers: Any) -> None:
    """A producer process: open, warm up, wait for the others, enqueue, report."""
    try:
        enqueue = source.open()
        answers.put(_produce(enqueue, count, lambda: barrier.wait(TIMEOUT)))
        close(enqueue)
    except BaseException as exc:
        barrier.abort()
        answers.put(BenchError(f"a producer process failed: {exc!r}"))


def _produce(
    enqueue: Enqueue, count: int, ready: Callable[[], object]
) -> tuple[float, float, list[float]]:
    """Warm up, wait for ``ready``, then enqueue ``count`` tasks: (start, end, latencies ms)."""
    enqueue()
    ready()
    latencies = []
    clock = time.perf_counter
    started = clock()
    for _ in range(count):
        before = clock()
        enqueue()
        latencies.append((clock() - before) * 1000)
    return started, clock(), latencies


def close(enqueue: Enqueue) -> None:
    """Close what a producer opened, if it has anything to close."""
    closing = getattr(enqueue, "close", None)
    if closing is not None:
        closing()


def _share(count: int, producers: int, index: int) -> int:
    return count // producers + (1 if index < count % producers else 0)


def _combine(results: Sequence[Any]) -> Run:
    for result in results:
        if isinstance(result, BaseException):
            raise BenchError(f"a producer failed: {result!r}") from result
        if result is None:
            raise BenchError("a producer did not finish in time")
    starts, ends, latencies = zip(*results, strict=True)
    every = [ms for part in latencies for ms in part]
    return Run(len(every), max(ends) - min(starts), every)
