"""The first scenarios: baseline, sigkill-storm, zombie and pg-crash (see
:mod:`chaos.scenarios`).

sigkill-storm and pg-crash also run event followers (:mod:`chaos.follower`)
from start to end, and SIGKILL one of them at every other worker kill and after
every server restart: the followers' deliveries are checked against the log
(:mod:`chaos.checks.follower`) under the very faults that test the queue, at the
cost of a few processes more rather than two more scenarios to run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path

from chaos import ChaosError
from chaos.checker import CORE
from chaos.checks import follower
from chaos.cluster import Mode, PrivateCluster
from chaos.harness import Harness
from chaos.journal import monotonic
from chaos.scenarios.base import SHORT, Context, Plan, Scenario, found, tasks


def baseline(harness: Harness, context: Context) -> None:
    harness.produce(context.plan.workloads)


def storm(harness: Harness, context: Context) -> None:
    harness.produce(context.plan.workloads)
    for fault in range(context.plan.faults):
        context.interval()
        busy = found(harness, lambda: harness.holders(left=0.2))
        if not busy:
            break  # the queue ran dry: no task left to kill a worker in
        harness.kill(context.rng.choice(busy))
        if fault % 2:
            _kill_a_follower(harness, context)


def _kill_a_follower(harness: Harness, context: Context) -> None:
    """SIGKILL one of the event followers (the harness starts another, which
    resumes after the last event its slot journaled)."""
    followers = harness.alive("follower")
    if followers:
        harness.kill(context.rng.choice(followers))


def zombie(harness: Harness, context: Context) -> None:
    plan = context.plan
    harness.produce(plan.workloads)
    # A long task begun at most half a lease ago: still running after the pause.
    left = plan.workloads[-1].durations[0] - plan.lease / 2
    for _ in range(plan.faults):
        context.interval()
        busy = found(harness, lambda: harness.holders(left=left))
        if not busy:
            raise ChaosError("no worker started a long task: nothing to pause")
        pid = context.rng.choice(busy)
        harness.pause(pid)
        context.wait(3 * plan.lease)
        harness.resume(pid)


def crash(harness: Harness, context: Context) -> None:
    cluster = context.cluster
    if cluster is None:
        raise ChaosError("pg-crash runs on a private cluster only")
    stop = harness.setup.folder / "stop-producers"
    harness.produce(replace(w, until=str(stop)) for w in context.plan.workloads)
    try:
        for mode in ("immediate", "fast") * context.plan.faults:
            context.interval()
            _restart(harness, cluster, mode)
            _kill_a_follower(harness, context)
    finally:
        stop.touch()


@contextmanager
def private_cluster(_: str, __: Path, ___: str | None) -> Iterator[tuple[str, PrivateCluster]]:
    """pg-crash's target: a private cluster of its own, to crash."""
    with PrivateCluster() as cluster:
        yield cluster.create_database("tenure_chaos"), cluster


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
        followers=3,
    ),
    "quick": Plan(
        workers=3,
        concurrency=4,
        workloads=(tasks(120, 3, durations=(0.1, 0.8)), tasks(120, 4, durations=(0.1, 0.8))),
        faults=4,
        every=(1.0, 1.5),
        drain=120,
        followers=2,
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
        followers=3,
    ),
    "quick": Plan(
        workers=3,
        concurrency=4,
        workloads=tuple(tasks(2000, s, durations=SHORT, rate=15, batch=5) for s in (7, 8)),
        faults=1,
        every=(2.0, 3.0),
        drain=120,
        followers=2,
    ),
}

FOLLOWED = (*CORE, *follower.CHECKS)
"""The checks of the scenarios that run event followers."""
SCENARIOS = (
    Scenario("baseline", BASELINE, baseline),
    Scenario("sigkill-storm", STORM, storm, checks=FOLLOWED),
    Scenario("zombie", ZOMBIE, zombie),
    Scenario(
        "pg-crash", CRASH, crash, stores=("postgres",), target=private_cluster, checks=FOLLOWED
    ),
)
