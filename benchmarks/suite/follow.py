"""Follow latency: from an enqueue's commit to its event reaching a follower.

A follower in a process of its own runs ``app.events.follow(after=cursor)``
from the log's tail, as a user's follower would, and notes ``time.time()`` as
each ``created`` event reaches it. This process enqueues tasks one at a time, a
few milliseconds apart (a pace that measures latency, not throughput), and
notes ``time.time()`` as each enqueue returns, its transaction committed. Both
clocks are this machine's, so the difference is the delay a follower sees: on
PostgreSQL the NOTIFY sent at commit, the listener's wake-up and one read of the
log; on SQLite the change counter's watch and one read. (The enqueue's return
comes a little after its commit, so a delivery may even be timed before it: the
figures err towards fast by that much, about a tenth of a millisecond here.)

It is measured twice: with nothing else happening, and with one worker process
draining a backlog meanwhile, so the follower reads every other transition too
and the machine is busy, as it is in production. On PostgreSQL that run has a
tail the idle one has not: an event is delivered only once every older
transaction has ended (the log never skips), and the worker's batch statements
(reserving, completing up to hundreds of tasks) hold a transaction id for
milliseconds to tens of milliseconds, so an enqueue that commits meanwhile
waits for them.

Every wait has a deadline: a follower that dies or never hears of an event ends
the measurement with :class:`~benchmarks.suite.BenchError` instead of hanging.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from benchmarks.suite import BenchError
from benchmarks.suite.app import bench_app
from benchmarks.suite.config import Plan, Sizes
from benchmarks.suite.metrics import Metric, percentiles
from benchmarks.suite.processes import Workers, bench_workers, wait_until
from benchmarks.suite.target import Target
from tenure.function import TaskFunction
from tenure.store import Store, TaskFilter
from tenure.task import Status

WANTED = (50, 90, 99)

SETTLE = 0.5
"""Seconds the follower is left alone after its warm-up, so that the measured
events find it idle, waiting to be woken."""

STARTUP_TIMEOUT = 60.0
"""Seconds for the follower process to start and hear of its first event."""

DELIVERY_TIMEOUT = 30.0
"""Seconds, after the last enqueue, for every event to reach the follower: far
more than a follower's slowest path (its poll, every ``store.event_poll``)."""

REPLY_TIMEOUT = 10.0
"""Seconds the follower process has to answer one request."""

IDLE_EXIT = 600.0
"""Seconds without a request after which the follower process gives up on its
parent and exits (it also exits when the parent's end of the pipe closes)."""

CHUNK = 1_000
"""Tasks per ``enqueue_many`` while filling the busy run's backlog."""


@dataclass(frozen=True, slots=True)
class Run:
    """One repetition: latencies of the events delivered, in ms, and how many."""

    latencies: list[float]
    enqueued: int
    backlog_left: int | None = None
    """Tasks still pending after the last enqueue (busy runs): above 0, the
    worker was busy throughout."""

    @property
    def delivered(self) -> int:
        return len(self.latencies)


def measure(target: Target, plan: Plan) -> list[Metric]:
    """Idle, then with a worker draining: a follower is rarely alone in production."""
    return [*latency(target, plan, busy=False), *latency(target, plan, busy=True)]


def latency(target: Target, plan: Plan, *, busy: bool) -> list[Metric]:
    """p50, p90, p99 and max of each repetition, and the events delivered."""
    sizes = plan.sizes
    runs: list[Run] = []
    for number in range(1, plan.repeat + 1):
        runs.append(_run_once(target.fresh(), sizes, busy=busy))
        plan.say(_describe(runs[-1], sizes, busy, number))
    key, context = ("follow_busy", "1 worker draining") if busy else ("follow", "idle")
    params: dict[str, Any] = {
        "tasks": sizes.follow,
        "gap_seconds": sizes.follow_gap,
        "workers": 1 if busy else 0,
    }
    if busy:
        params |= {"backlog": sizes.follow_backlog, "backlog_left": [r.backlog_left for r in runs]}
    found = [_summary(run) for run in runs]
    metrics = [
        Metric(key + f".{name}", f"follow latency {name}, {context}", "ms", False, samples, params)
        for name, samples in _by_name(found).items()
    ]
    label = f"follow: events delivered of {sizes.follow:,}, {context}"
    delivered = [float(run.delivered) for run in runs]
    return [*metrics, Metric(key + ".delivered", label, "events", True, delivered, params)]


def _summary(run: Run) -> dict[str, float]:
    """{"p50": ..., "p90": ..., "p99": ..., "max": ...} of one run, in ms."""
    if run.delivered < 2:
        raise BenchError(f"the follower heard of {run.delivered} of {run.enqueued} events")
    cuts = percentiles(run.latencies, WANTED)
    return {**{f"p{p}": cuts[p] for p in WANTED}, "max": max(run.latencies)}


def _by_name(found: list[dict[str, float]]) -> dict[str, list[float]]:
    return {name: [summary[name] for summary in found] for name in found[0]}


def _describe(run: Run, sizes: Sizes, busy: bool, number: int) -> str:
    summary = _summary(run)
    shown = ", ".join(f"{name} {value:.1f} ms" for name, value in summary.items())
    line = (
        f"follow {run.enqueued} enqueues {sizes.follow_gap * 1000:g} ms apart"
        f"{', 1 worker draining' if busy else ''}, run {number}: {shown}; "
        f"{run.delivered}/{run.enqueued} delivered"
    )
    if run.delivered < run.enqueued:
        line += " (EVENTS MISSING)"
    if busy:
        line += f", backlog left {run.backlog_left:,}"
        if not run.backlog_left:
            line += " (the worker ran out of work: raise follow_backlog)"
    return line


def _run_once(url: str, sizes: Sizes, *, busy: bool) -> Run:
    """Fill the backlog (if busy), start the follower at the tail, warm it up,
    start the worker (if busy), then enqueue and collect."""
    app, noop = bench_app(url)
    store = app.store
    try:
        if busy:
            _fill(noop, sizes.follow_backlog)
        _, cursor = app.events.tail(1)
        with Follower(url, cursor) as follower:
            follower.warm_up(noop.enqueue)
            with _meanwhile(url, store, busy=busy):
                committed = _enqueue(noop, sizes.follow, sizes.follow_gap)
                left = _count(store, Status.PENDING) if busy else None
                received = follower.collect(committed.keys())
    finally:
        app.close()
    latencies = [(received[i] - at) * 1000 for i, at in committed.items() if i in received]
    return Run(latencies, len(committed), left)


def _fill(noop: TaskFunction[[], None], count: int) -> None:
    for first in range(0, count, CHUNK):
        noop.enqueue_many([()] * min(CHUNK, count - first))


def _meanwhile(url: str, store: Store, *, busy: bool) -> AbstractContextManager[object]:
    """What goes on while the tasks are enqueued: a worker draining, or nothing."""
    return _draining(url, store) if busy else _settled()


@contextlib.contextmanager
def _settled() -> Iterator[None]:
    """Leave the follower idle for a moment before the enqueues begin."""
    time.sleep(SETTLE)
    yield


@contextlib.contextmanager
def _draining(url: str, store: Store) -> Iterator[Workers]:
    """One worker process, busy: the block starts once it has finished a task."""
    with bench_workers(url, 1) as running:
        wait_until(
            lambda: _count(store, Status.DONE) > 0,
            "the worker finishes a task",
            workers=running,
            timeout=STARTUP_TIMEOUT,
        )
        yield running


def _count(store: Store, status: Status) -> int:
    return store.task_count(TaskFilter(status=status))


def _enqueue(noop: TaskFunction[[], None], count: int, gap: float) -> dict[str, float]:
    """Enqueue ``count`` tasks ``gap`` seconds apart; each id's ``time.time()``
    just after its enqueue returned (its transaction committed)."""
    committed: dict[str, float] = {}
    begin = time.perf_counter()
    for index in range(count):
        time.sleep(max(0.0, begin + index * gap - time.perf_counter()))
        task_id = noop.enqueue().id
        committed[task_id] = time.time()
    return committed


class Follower(AbstractContextManager["Follower"]):
    """The follower process (spawned, so it shares nothing with this one) and
    the pipe it answers on. Leaving the block stops it, or kills it."""

    def __init__(self, url: str, cursor: str | None) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipe, child = context.Pipe()
        self._process = context.Process(
            target=follow_in_child, args=(url, cursor, child), name="bench-follower", daemon=True
        )
        self._child = child

    def __enter__(self) -> Follower:
        self._process.start()
        self._child.close()  # the child holds its end: EOF here if it dies
        self._reply(STARTUP_TIMEOUT)
        return self

    def received(self, timeout: float = REPLY_TIMEOUT) -> dict[str, float]:
        """Task id -> ``time.time()`` at which its created event reached the follower."""
        self._pipe.send("received")
        found: dict[str, float] = self._reply(timeout)
        return found

    def warm_up(self, enqueue: Callable[[], object]) -> None:
        """Enqueue a task every 50 ms until the follower has heard of one: from
        then on it is following (woken by the store, or at least polling)."""
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not self.received():
            if time.monotonic() > deadline:
                raise BenchError(f"the follower heard of no event in {STARTUP_TIMEOUT:.0f} s")
            enqueue()
            time.sleep(0.05)

    def collect(self, ids: Collection[str]) -> dict[str, float]:
        """What the follower received once it has every one of ``ids``, or once
        :data:`DELIVERY_TIMEOUT` has passed (the caller counts what is missing)."""
        deadline = time.monotonic() + DELIVERY_TIMEOUT
        while True:
            found = self.received()
            if all(task_id in found for task_id in ids) or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def _reply(self, timeout: float) -> Any:
        """The follower's next answer; raise if it dies, fails or is silent too long."""
        deadline = time.monotonic() + timeout
        while not self._pipe.poll(0.1):
            if not self._process.is_alive():
                raise BenchError(f"the follower exited with code {self._process.exitcode}")
            if time.monotonic() > deadline:
                raise BenchError(f"the follower did not answer within {timeout:.0f} s")
        try:
            kind, value = self._pipe.recv()
        except EOFError:  # it died between the poll and the read
            self._process.join(REPLY_TIMEOUT)
            raise BenchError(f"the follower exited with code {self._process.exitcode}") from None
        if kind == "error":
            raise BenchError(f"the follower failed: {value}")
        return value

    def __exit__(self, *_: object) -> None:
        with contextlib.suppress(OSError):
            self._pipe.send("stop")
        self._process.join(REPLY_TIMEOUT)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(REPLY_TIMEOUT)
        self._pipe.close()


def follow_in_child(url: str, cursor: str | None, pipe: Connection) -> None:
    """The follower process: follow the log on a thread, noting when each
    created event arrives, and answer the parent's requests until told to stop
    (or until the parent is gone). Module-level, so a spawned process finds it."""
    app, _ = bench_app(url)
    received: dict[str, float] = {}
    failed: list[str] = []

    def follow() -> None:
        try:
            for event in app.events.follow(after=cursor, kinds=["created"]):
                received[event.task_id] = time.time()
        except Exception as exc:  # handed to the parent, which reports it
            failed.append(f"{type(exc).__name__}: {exc}")

    threading.Thread(target=follow, name="bench-follow", daemon=True).start()
    pipe.send(("started", None))
    with contextlib.suppress(EOFError, OSError):
        while pipe.poll(IDLE_EXIT) and pipe.recv() == "received":
            reply = ("error", failed[0]) if failed else ("received", dict(received))
            pipe.send(reply)
