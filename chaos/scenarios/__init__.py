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
- **poison** (on the process pool): tasks that raise, ``os._exit(1)``,
  segfault, exceed a memory limit or hang ignoring SIGTERM (one of each kind in
  turn, 20 in full), beside healthy tasks; first the healthy tasks alone (the
  run's own baseline), then as many again beside the poison (full: 3,000 each).
- **scheduler-election**: three scheduler candidates (leader leases of 2 s);
  the elected one is SIGKILLed or paused for a leader lease in turn, while a
  periodic task is due every second (full: 6 kills and 6 pauses).

Every worker has leases of 2 s (a keepalive every 2/3 s) and looks for work
every 0.1 s when idle; the one scheduler runs its cycle every 0.5 s.

:func:`run` runs one scenario on one store, drains, checks, and returns the
:class:`Outcome`, whose :meth:`~Outcome.line` is the figure line.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from chaos import ChaosError
from chaos.checker import Bounds, Verdict, check
from chaos.cluster import PrivateCluster
from chaos.evidence import gather
from chaos.harness import APP, Harness, Setup
from chaos.journal import monotonic
from chaos.scenarios import classic, election, poison
from chaos.scenarios.base import STORES, Context, Plan, Profile, Scenario, tasks
from tenure.store import open_store

__all__ = ["SCENARIOS", "STORES", "Outcome", "Plan", "Profile", "Scenario", "run", "tasks"]


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("baseline", STORES, classic.BASELINE, classic.baseline),
        Scenario("sigkill-storm", STORES, classic.STORM, classic.storm),
        Scenario("zombie", STORES, classic.ZOMBIE, classic.zombie),
        Scenario("pg-crash", ("postgres",), classic.CRASH, classic.crash),
        Scenario("poison", STORES, poison.POISON, poison.poison),
        Scenario("scheduler-election", STORES, election.ELECTION, election.election),
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
        if f.poison:
            text += f" poison {f.poison} attempts {_kinds(f.poison_kinds)} deaths {f.deaths}"
        if f.throughput:
            before, beside = f.throughput
            text += (
                f" healthy {beside:.1f}/s beside poison, {before:.1f}/s alone"
                f" ({beside / before:.0%})"
            )
        if f.slots:
            text += f" slots {f.slots} missing {f.missing_slots} failover {_spread(f.failover)}"
        return text + f" violations {len(self.verdict.violations)} in {self.seconds:.0f}s"


def _kinds(counts: dict[str, int]) -> str:
    return ",".join(f"{kind}:{n}" for kind, n in sorted(counts.items()))


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
            app=plan.app or app,
            pool=plan.pool,
            schedulers=plan.schedulers,
            leader_lease=plan.leader_lease,
        )
        with open_store(target) as opened:
            with Harness(setup, opened) as harness:
                scenario.inject(harness, Context(plan, random.Random(seed), cluster))
                harness.drain(plan.drain)
            evidence = gather(setup.journals, opened)
    bounds = Bounds(plan.lease, plan.cycle, plan.poll, leader_lease=plan.leader_lease)
    verdict = check(evidence, bounds)
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
