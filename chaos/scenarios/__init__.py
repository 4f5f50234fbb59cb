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
- Both sigkill-storm and pg-crash also run event followers (full: 3, quick: 2)
  that journal every event they receive; one is SIGKILLed at every other worker
  kill and after every restart, and resumes from its last cursor (checks F and
  G: every event delivered, in order, with no gap).
- **poison** (on the process pool): tasks that raise, ``os._exit(1)``,
  segfault, exceed a memory limit or hang ignoring SIGTERM (one of each kind in
  turn, 20 in full), beside healthy tasks; first the healthy tasks alone (the
  run's own baseline), then as many again beside the poison (full: 3,000 each).
- **scheduler-election**: three scheduler candidates (leader leases of 2 s);
  the elected one is SIGKILLed or paused for a leader lease in turn, while a
  periodic task is due every second (full: 6 kills and 6 pauses).
- **unique-torture**: twenty producers enqueue unique tasks of every lock
  phase and conflict strategy on a few keys (some inside transactions they
  roll back), while workers are SIGKILLed and paused in turn; then every task
  name and key once more, which no lock left behind may refuse (full: 50 keys,
  4,000 enqueues, 10 faults).
- **connection-kills** (PostgreSQL): bursts of ``pg_terminate_backend`` on the
  sessions of the workers, producers and scheduler, most of them in the middle
  of a statement or transaction (full: 30 bursts).
- **sqlite-faults** (SQLite, on a tmpfs of its own): the disk fills up for a
  while, then the database file turns read-only while a new producer starts;
  every refused enqueue raises a tenure error, ``PRAGMA integrity_check`` stays
  ok, and the queue drains (and that producer enqueues) once the disk is
  writable again (full: three of each).
- **bad-input**: while workers drain, bad input at the public operations
  (payloads that are not JSON, hold NUL or weigh 10 and 100 MB, malformed
  cursors, ids, leases, limits, priorities, delays, unknown names and options): each
  refused with a tenure error, nothing written; topics such as ``'; DROP TABLE
  tasks;--``, ``%`` and ``_`` filter literally (full: 10 rounds).
- **clock-skew**: workers at -2 h and +2 h (libfaketime), one clock jumping
  three hours forward mid-run, then the scheduler at +2 h; skewed workers are
  SIGKILLed in the middle of a task at each stage (full: 18 kills).
- **partition** (PostgreSQL, on a private cluster): three worker hosts, each in
  a network namespace of its own; one in the middle of a task is cut off from
  the store for three leases, then healed (full: three cuts).

Every worker has leases of 2 s (a keepalive every 2/3 s) and looks for work
every 0.1 s when idle; the one scheduler runs its cycle every 0.5 s.

Each is a :class:`~chaos.scenarios.base.Scenario` made in its own module
(``classic`` holds the first four), which carries everything :func:`run`
needs of it: its plans, what it injects, the App and the target it runs
against, its checks and its own figures. :func:`run` runs one scenario on one
store, drains, checks, and returns the :class:`Outcome`, whose
:meth:`~Outcome.line` is the figure line.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path

from chaos import ChaosError
from chaos.checker import Bounds, Figures, Verdict, check
from chaos.evidence import gather
from chaos.follower import catch_up
from chaos.harness import Harness, Setup
from chaos.journal import monotonic
from chaos.scenarios import (
    bad_input,
    classic,
    connections,
    election,
    partition,
    poison,
    skew,
    sqlite_faults,
    unique,
)
from chaos.scenarios.base import STORES, Context, Plan, Profile, Scenario, tasks
from tenure.store import open_store

CATCH_UP = 30.0
"""Seconds the followers get, after the drain, to reach the end of the log."""

__all__ = ["SCENARIOS", "STORES", "Outcome", "Plan", "Profile", "Scenario", "run", "tasks"]


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        *classic.SCENARIOS,
        poison.SCENARIO,
        election.SCENARIO,
        unique.SCENARIO,
        connections.SCENARIO,
        sqlite_faults.SCENARIO,
        skew.SCENARIO,
        bad_input.SCENARIO,
        partition.SCENARIO,
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
    own: str = ""
    """The scenario's own figures, for the end of its line."""

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
        if f.followers:
            text += (
                f" followers {f.followers} (killed {f.follower_kills}) delivered {f.delivered}"
                f" missed {f.undelivered} again {f.redelivered} lag {_spread(f.lag)}"
            )
        text += _moved(f) + self.own + f" violations {len(self.verdict.violations)}"
        if self.verdict.unknown:  # checks that raised: neither passed nor failed
            text += f" unknown {','.join(self.verdict.unknown)}"
        return text + f" in {self.seconds:.0f}s"


def _moved(f: Figures) -> str:
    """The figures of clock-skew (the clocks moved) and partition (the cuts)."""
    text = f" clocks {', '.join(f.clocks)} rerun {_spread(f.rerun)}" if f.clocks else ""
    if f.cuts:
        text += f" cuts {f.cuts} rerun {_spread(f.rerun)} resume {_spread(f.resume)}"
    return text


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
    app: str | None = None,
    plan: Plan | None = None,
    seed: int = 0,
) -> Outcome:
    """Run scenario ``name`` on ``store`` against its target (its own
    database: on SQLite a file in ``folder``, on PostgreSQL the empty database
    at ``url``; or a cluster or a disk of its own) and check it; ``app`` and
    ``plan`` in place of the scenario's own."""
    scenario = SCENARIOS[name]
    if store not in scenario.stores:
        raise ChaosError(f"{name} runs on {', '.join(scenario.stores)} only, not {store}")
    plan = plan or scenario.plans[profile]
    began = monotonic()
    with scenario.target(store, folder, url) as (target, cluster):
        setup = Setup(target, folder, plan, app=app or scenario.app)
        with open_store(target) as opened:
            with Harness(setup, opened) as harness:
                scenario.inject(harness, Context(plan, random.Random(seed), cluster))
                harness.drain(plan.drain)
                if plan.followers:
                    catch_up(harness, CATCH_UP)
            evidence = gather(setup.journals, opened)
    verdict = check(evidence, Bounds(plan), scenario.checks)
    own = scenario.figures(setup.journals, verdict.figures)
    return Outcome(name, store, verdict, monotonic() - began, folder, own)
