"""The scenarios, each in two profiles: ``full`` (``make chaos``, minutes each)
and ``quick`` (about a thousand tasks in all, a few faults of each kind: the
test suite runs it).

- **baseline**: short tasks, no fault; a few fail once or for good (full:
  10,000 tasks from 2 producers, 4 workers).
- **sigkill-storm**: tasks of 0.1 to 2 s; every 2 to 5 s a worker in the
  middle of a task is SIGKILLed, and the harness starts another in its place
  (full: 6,000 tasks, 4 workers of 8 slots, 50 kills).
- **zombie**: a worker running a long task is SIGSTOPped for three leases, then
  SIGCONTed: its lease was revoked and its task given to another; it must
  abandon its execution at once, and nothing it writes may be accepted (full:
  3 pauses among 2,000 short tasks).
- **pg-crash** (PostgreSQL, on a private cluster): ``pg_ctl restart -m
  immediate`` and ``-m fast`` while producers enqueue and workers drain (full:
  three of each).

Every worker has leases of 2 s (a keepalive every 2/3 s) and looks for work
every 0.1 s when idle; the one scheduler runs its cycle every 0.5 s.

:func:`run` runs one scenario on one store, drains, checks, and returns the
:class:`Outcome`, whose :meth:`~Outcome.line` is the figure line.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal

from chaos import ChaosError
from chaos.checker import Bounds, Verdict, check
from chaos.cluster import Mode, PrivateCluster
from chaos.evidence import gather
from chaos.harness import APP, Harness, Setup
from chaos.journal import monotonic
from chaos.producers import Workload
from tenure.store import open_store

Profile = Literal["full", "quick"]
STORES = ("sqlite", "postgres")
PRIORITIES = (0, 5, 10)


@dataclass(frozen=True, slots=True)
class Plan:
    """A scenario's numbers in one profile: its processes, what the producers
    enqueue, how many faults (per kind) come how often, and the time settings."""

    workers: int
    concurrency: int
    workloads: tuple[Workload, ...]
    faults: int = 0
    every: tuple[float, float] = (2.0, 5.0)
    lease: float = 2.0
    cycle: float = 0.5
    poll: float = 0.1
    drain: float = 600.0


@dataclass(slots=True)
class Context:
    """What an injection may use besides the harness."""

    plan: Plan
    rng: random.Random
    cluster: PrivateCluster | None = None
    _pause: threading.Event = field(default_factory=threading.Event)

    def wait(self, seconds: float) -> None:
        """Let the scenario run ``seconds`` (a fault's pacing, not a race)."""
        self._pause.wait(seconds)

    def interval(self) -> None:
        self.wait(self.rng.uniform(*self.plan.every))


Inject = Callable[[Harness, Context], None]


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    stores: tuple[str, ...]
    plans: dict[str, Plan]
    inject: Inject


def tasks(count: int, seed: int, **more: Any) -> Workload:
    """``count`` tasks for one producer, of 0 to 10 ms unless told otherwise;
    5 % fail their first attempt, 1 % every attempt."""
    usual = Workload(
        count,
        batch=20,
        durations=(0.0, 0.01),
        flaky=0.05,
        doomed=0.01,
        priorities=PRIORITIES,
        seed=seed,
    )
    return replace(usual, **more)


def _baseline(harness: Harness, context: Context) -> None:
    harness.produce(context.plan.workloads)


def _storm(harness: Harness, context: Context) -> None:
    harness.produce(context.plan.workloads)
    for _ in range(context.plan.faults):
        context.interval()
        busy = _found(harness, lambda: harness.holders(left=0.2))
        if not busy:
            break  # the queue ran dry: no task left to kill a worker in
        harness.kill(context.rng.choice(busy))


def _zombie(harness: Harness, context: Context) -> None:
    plan = context.plan
    harness.produce(plan.workloads)
    # A long task begun at most half a lease ago: still running after the pause.
    left = plan.workloads[-1].durations[0] - plan.lease / 2
    for _ in range(plan.faults):
        context.interval()
        busy = _found(harness, lambda: harness.holders(left=left))
        if not busy:
            raise ChaosError("no worker started a long task: nothing to pause")
        pid = context.rng.choice(busy)
        harness.pause(pid)
        context.wait(3 * plan.lease)
        harness.resume(pid)


def _crash(harness: Harness, context: Context) -> None:
    cluster = context.cluster
    if cluster is None:
        raise ChaosError("pg-crash runs on a private cluster only")
    stop = harness.setup.folder / "stop-producers"
    harness.produce(replace(w, until=str(stop)) for w in context.plan.workloads)
    try:
        for mode in ("immediate", "fast") * context.plan.faults:
            context.interval()
            _restart(harness, cluster, mode)
    finally:
        stop.touch()


def _restart(harness: Harness, cluster: PrivateCluster, mode: Mode) -> None:
    """Restart the server; wait (and write down how long) until every worker
    listens again and has started a task again."""
    harness.faults.write("server-down", mode=mode)
    cluster.restart(mode)
    up: float = harness.faults.write("server-up")["mono"]
    listening = harness.wait_for(
        lambda: _listeners(harness.setup.url) >= len(harness.workers()),
        "every worker listening again",
        timeout=15,
        fail=False,
    )
    harness.faults.write("listening", after=monotonic() - up if listening else None)
    harness.wait_for(
        partial(_all_started_since, harness, up),
        "every worker starting a task again",
        timeout=15,
        fail=False,
    )


def _all_started_since(harness: Harness, moment: float) -> bool:
    return set(harness.workers()) <= harness.started_since(moment)


def _found(harness: Harness, look: Callable[[], list[int]], timeout: float = 30) -> list[int]:
    """The pids ``look`` returns once it returns some; none once the queue is
    empty for good (or after ``timeout``)."""
    found: list[int] = []

    def seen() -> bool:
        found[:] = look()
        return bool(found) or (harness.producers_done() and harness.unfinished() == 0)

    harness.wait_for(seen, "a worker in the middle of a task", timeout, fail=False)
    return found


def _listeners(url: str) -> int:
    """The sessions of the scenario's database that LISTEN for new tasks."""
    import psycopg  # noqa: PLC0415 - PostgreSQL only

    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=2) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name LIKE %s AND query ILIKE %s",
                ["%-listener", "LISTEN%tenure_tasks%"],
            ).fetchone()
    except psycopg.Error:
        return 0
    return int(row[0]) if row else 0


SHORT = (0.05, 0.3)
"""Durations of the tasks around the faults of zombie and pg-crash."""
LONG = {"batch": 1, "flaky": 0, "doomed": 0}
"""Long tasks for the zombie: one per batch, and none failing on purpose."""

BASELINE = {
    "full": Plan(workers=4, concurrency=4, workloads=(tasks(5000, 1), tasks(5000, 2))),
    "quick": Plan(workers=3, concurrency=4, workloads=(tasks(200, 1), tasks(200, 2)), drain=120),
}
STORM = {
    "full": Plan(
        workers=4,
        concurrency=8,
        workloads=(tasks(3000, 3, durations=(0.1, 2.0)), tasks(3000, 4, durations=(0.1, 2.0))),
        faults=50,
        every=(2.0, 5.0),
    ),
    "quick": Plan(
        workers=3,
        concurrency=4,
        workloads=(tasks(120, 3, durations=(0.1, 0.8)), tasks(120, 4, durations=(0.1, 0.8))),
        faults=4,
        every=(1.0, 1.5),
        drain=120,
    ),
}
ZOMBIE = {
    "full": Plan(
        workers=4,
        concurrency=4,
        workloads=(
            tasks(2000, 5, durations=SHORT, rate=20),
            tasks(10, 6, durations=(8.0, 8.0), rate=0.2, **LONG),  # four leases each
        ),
        faults=3,
        every=(2.0, 4.0),
    ),
    "quick": Plan(
        workers=3,
        concurrency=4,
        workloads=(
            tasks(100, 5, durations=SHORT, rate=15),
            tasks(4, 6, durations=(8.0, 8.0), rate=0.5, **LONG),
        ),
        faults=1,
        every=(0.5, 1.0),
        drain=120,
    ),
}
CRASH = {  # producers go on until the last restart is over: counts are at most
    "full": Plan(
        workers=4,
        concurrency=4,
        workloads=tuple(tasks(100_000, s, durations=SHORT, rate=25, batch=5) for s in (7, 8)),
        faults=3,
        every=(5.0, 8.0),
    ),
    "quick": Plan(
        workers=3,
        concurrency=4,
        workloads=tuple(tasks(2000, s, durations=SHORT, rate=15, batch=5) for s in (7, 8)),
        faults=1,
        every=(2.0, 3.0),
        drain=120,
    ),
}

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("baseline", STORES, BASELINE, _baseline),
        Scenario("sigkill-storm", STORES, STORM, _storm),
        Scenario("zombie", STORES, ZOMBIE, _zombie),
        Scenario("pg-crash", ("postgres",), CRASH, _crash),
    )
}


@dataclass(slots=True)
class Outcome:
    """One scenario run on one store: its verdict and how long it took."""

    scenario: str
    store: str
    verdict: Verdict
    seconds: float
    folder: Path

    def line(self) -> str:
        """The figure line, e.g. ``sigkill-storm postgres: tasks 10000 kills 50 …``."""
        f = self.verdict.figures
        text = (
            f"{self.scenario} {self.store}: tasks {f.tasks} kills {f.kills} lost {f.lost} "
            f"dup-endings {f.dup_endings} dup-executions {f.dup_executions} "
            f"(in flight at kill {f.in_flight_at_kill}) recovery {_spread(f.recovery)}"
        )
        if f.pauses:
            text += f" pauses {f.pauses} abandoned {f.abandoned} abandon {_spread(f.abandon)}"
        if f.restarts:
            text += (
                f" restarts {f.restarts} worker-recovery {_spread(f.worker_recovery)}"
                f" listen {_spread(f.listen)}"
            )
        return text + f" violations {len(self.verdict.violations)} in {self.seconds:.0f}s"


def _spread(samples: list[float]) -> str:
    if not samples:
        return "-"
    ordered = sorted(samples)
    p99 = ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]
    return f"max {ordered[-1]:.2f}s p99 {p99:.2f}s"


def run(
    name: str,
    store: str,
    profile: Profile,
    folder: Path,
    *,
    url: str | None = None,
    app: str = APP,
    plan: Plan | None = None,
    seed: int = 0,
) -> Outcome:
    """Run scenario ``name`` on ``store`` (``sqlite``: a file in ``folder``;
    ``postgres``: the empty database at ``url``, or for pg-crash a private
    cluster of its own) and check it."""
    scenario = SCENARIOS[name]
    if store not in scenario.stores:
        raise ChaosError(f"{name} runs on {', '.join(scenario.stores)} only, not {store}")
    plan = plan or scenario.plans[profile]
    began = monotonic()
    with _target(name, store, folder, url) as (target, cluster):
        setup = Setup(
            url=target,
            folder=folder,
            workers=plan.workers,
            concurrency=plan.concurrency,
            lease=plan.lease,
            cycle=plan.cycle,
            poll=plan.poll,
            app=app,
        )
        with open_store(target) as opened:
            with Harness(setup, opened) as harness:
                scenario.inject(harness, Context(plan, random.Random(seed), cluster))
                harness.drain(plan.drain)
            evidence = gather(setup.journals, opened)
    verdict = check(evidence, Bounds(plan.lease, plan.cycle, plan.poll))
    return Outcome(name, store, verdict, monotonic() - began, folder)


@contextmanager
def _target(
    name: str, store: str, folder: Path, url: str | None
) -> Iterator[tuple[str, PrivateCluster | None]]:
    if store == "sqlite":
        yield f"sqlite:///{folder.resolve() / 'chaos.db'}", None
    elif name == "pg-crash":
        with PrivateCluster() as cluster:
            yield cluster.create_database("tenure_chaos"), cluster
    elif url is None:
        raise ChaosError(f"{name} on PostgreSQL needs the URL of an empty database")
    else:
        yield url, None
