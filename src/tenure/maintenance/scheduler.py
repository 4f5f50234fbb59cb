"""The one scheduler: the cycle that the elected leader runs for everyone.

Each cycle (every ``interval`` seconds, 1 s by default), if this process leads:

1. supervise leases: revoke tasks whose holders went silent (rollback of lost
   tasks) and wake snoozed tasks whose snooze is over (also halfway between
   cycles, so recovery takes at most one lease time plus one cycle);
2. enqueue due periodic tasks, once per tick, and end cancelled the pending
   tasks past their deadline (``expires``), which no worker reserves;
3. run due observer queries and save their reports, once per slot, and fold
   the task tallies that stats and metrics read;
4. delete finished tasks and events older than the retention (7 days by
   default), in batches, for up to ``prune_budget`` seconds a cycle
   (:mod:`tenure.maintenance.retention`): every cycle while prunes find
   something, so that nothing outlives the retention by more than a cycle or
   two and the deletes come as a trickle, else every ``prune_every`` seconds;
5. every ``prune_every`` seconds: delete the reports of queries no longer run,
   forget workers silent for long, expire unique locks past their time to live
   (a lock's own task gives it up in the transition that ends its phase; this
   is the safety net), and, where the database does not (PostgreSQL with
   autovacuum off), refresh the planner's statistics of tables that changed
   much.

A process that stands by still watches leases (the mark half of supervision,
every half leader lease): should the leader die with a worker, whoever takes
over already knows how long each lease has gone unrenewed, and the dead
worker's tasks come back about one lease after its last keepalive, not one
leader lease plus one lease. Marks stay valid across terms: each says "this
version, first seen then by my own clock", and a revoke is a compare-and-set
on that version.

Retries need no step of their own: a failed attempt goes back to pending with
its backoff in ``run_at``, and reserve honours ``run_at``. Every step is
idempotent and compare-and-set, so a cycle that runs twice, or late, is harmless;
a step that fails is logged and retried next cycle without stopping the others.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tenure.errors import TenureError
from tenure.maintenance.leader import Leadership
from tenure.maintenance.observer import Observation, Observer
from tenure.maintenance.periodic import Lookup, Periodic, PeriodicEnqueuer
from tenure.maintenance.retention import BUDGET, Retention
from tenure.maintenance.supervisor import Supervisor
from tenure.store import Store
from tenure.store.flowcontrol import EXPIRE_BATCH
from tenure.store.types import Backlog, Report
from tenure.task import Task

log = logging.getLogger("tenure.scheduler")

DEFAULT_RETENTION = 7 * 24 * 3600.0


EXPIRE_BUDGET = 0.5
"""Seconds a cycle spends at most sweeping tasks past their deadline."""


@dataclass(slots=True)
class CycleReport:
    """What one cycle did (``leader`` false: it only stood by)."""

    leader: bool
    revoked: list[Task] = field(default_factory=list)
    enqueued: int = 0
    reports: list[Report] = field(default_factory=list)
    pruned_tasks: int = 0
    pruned_events: int = 0
    backlog: Backlog | None = None
    """What retention left older than the retention (``None``: the cycle did
    not prune)."""
    pruned_reports: int = 0
    expired_tasks: list[str] = field(default_factory=list)
    """The tasks ended cancelled for their deadline (at most a batch a cycle)."""
    expired_locks: int = 0
    analyzed: list[str] = field(default_factory=list)
    failed_steps: list[str] = field(default_factory=list)


class Scheduler:
    """Runs the cycle while it holds the leadership; stands by otherwise."""

    def __init__(
        self,
        store: Store,
        owner: str,
        *,
        periodics: list[Periodic] | None = None,
        limits: Mapping[str, int] | None = None,
        rates: Mapping[str, tuple[int, float]] | None = None,
        ageing: Mapping[str, tuple[float, int]] | None = None,
        tasks: Lookup | None = None,
        observations: list[Observation] | None = None,
        interval: float = 1.0,
        supervise_every: float | None = None,
        leader_lease: float = 10.0,
        retention: float = DEFAULT_RETENTION,
        prune_every: float = 60.0,
        prune_budget: float = BUDGET,
        worker_silence: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        on_cycle: Callable[[CycleReport], object] | None = None,
    ) -> None:
        self.store = store
        self.interval = interval
        # Twice a cycle by default: a keepalive is seen at most half a cycle
        # late, and an expiry acted on at most half a cycle late, so a dead
        # worker's tasks come back within one lease time plus one cycle.
        self.supervise_every = interval / 2 if supervise_every is None else supervise_every
        self.retention = retention
        self.prune_every = prune_every
        self.worker_silence = worker_silence
        self.clock = clock
        self.on_cycle = on_cycle
        """Told of every cycle led (metrics count the revoked tasks)."""
        self.leadership = Leadership(store, owner, lease_seconds=leader_lease, clock=clock)
        self.supervisor = Supervisor(store, clock=clock)
        self.periodic = PeriodicEnqueuer(periodics or [], tasks)
        self.limits = dict(limits or {})
        self.rates = dict(rates or {})
        self.ageing = dict(ageing or {})
        self._limits_stored = False
        self.observer = Observer(observations or [])
        self.pruner = Retention(
            store, retention, budget=prune_budget, idle_every=prune_every, clock=clock
        )
        self.watch_every = leader_lease / 2
        self._next_prune = self._next_watch = 0.0
        self._was_leader = False

    def run_once(self) -> CycleReport:
        """One cycle: lead and work, or stand by (and watch leases now and then)."""
        leading = self.leadership.tick()
        if leading and not self._was_leader:  # a new term: ticks from what the store says
            self.periodic.reset()
            self.observer.reset()
            self._limits_stored = not (self.limits or self.rates or self.ageing)
        self._was_leader = leading
        report = CycleReport(leader=leading)
        if not leading:
            self._watch()
            return report
        if not self._limits_stored:
            self._step(report, "limits", self._store_limits)
        self._step(report, "supervise", lambda: self._supervise(report))
        self._step(report, "periodic", lambda: self._enqueue(report))
        self._step(report, "expire", lambda: self._expire(report))
        self._step(report, "observe", lambda: self._observe(report))
        self._step(report, "tally", self.store.tally_fold)
        if self.pruner.due():
            self._step(report, "prune", lambda: self._prune(report))
        if self.clock() >= self._next_prune:
            self._step(report, "housekeep", lambda: self._housekeep(report))
            self._next_prune = self.clock() + self.prune_every
        if self.on_cycle is not None:
            self.on_cycle(report)
        return report

    def _step(self, report: CycleReport, name: str, step: Callable[[], None]) -> None:
        if not self.leadership.is_leader:  # paused since the cycle began: do no more
            return
        try:
            step()
        except TenureError as exc:
            log.warning("scheduler step %s failed, will retry next cycle: %s", name, exc)
            report.failed_steps.append(name)

    def _watch(self) -> None:
        """Standing by: mark leases, never sweep."""
        if self.clock() < self._next_watch:
            return
        self._next_watch = self.clock() + self.watch_every
        try:
            self.supervisor.mark()
        except TenureError as exc:
            log.warning("standby could not watch leases, will retry: %s", exc)

    def _store_limits(self) -> None:
        """Store the topics' limits, rates and ageing declared in code, once a
        term: one changed at run time holds until the next term."""
        for topic, most in self.limits.items():
            self.store.topic_limit(topic, most)
        for topic, (starts, per) in self.rates.items():
            self.store.topic_rate(topic, starts, per=per)
        for topic, (every, raised) in self.ageing.items():
            self.store.topic_ageing(topic, every, most=raised)
        self._limits_stored = True

    def _supervise(self, report: CycleReport) -> None:
        report.revoked = self.supervisor.run_once().revoked

    def _enqueue(self, report: CycleReport) -> None:
        report.enqueued = self.periodic.run_once(self.store)

    def _expire(self, report: CycleReport) -> None:
        """Sweep the tasks past their deadline, a batch at a time, for at most
        :data:`EXPIRE_BUDGET` seconds: a burst of them is not left for reserves
        to walk past for long."""
        deadline = self.clock() + EXPIRE_BUDGET
        while True:
            swept = self.store.task_expire(limit=EXPIRE_BATCH)
            report.expired_tasks += swept
            if len(swept) < EXPIRE_BATCH or self.clock() >= deadline:
                break
        if report.expired_tasks:
            log.info("ended cancelled past their deadline: %d", len(report.expired_tasks))

    def _observe(self, report: CycleReport) -> None:
        report.reports = self.observer.run_once(self.store, self.leadership.owner)

    def _prune(self, report: CycleReport) -> None:
        pruned = self.pruner.prune()
        report.pruned_tasks, report.pruned_events = pruned.tasks, pruned.events
        report.backlog = pruned.backlog

    def _housekeep(self, report: CycleReport) -> None:
        report.pruned_reports = self.store.report_prune(self.retention)
        self.store.tally_fold(compact=True)
        report.expired_locks = self.store.unique_lock_prune()
        self.store.worker_prune(self.worker_silence)
        self.store.rate_prune()
        report.analyzed = self.store.statistics_refresh()

    def supervise_between_cycles(self) -> list[Task]:
        """Supervision alone, while the leadership is held (no extension needed:
        the cycle keeps it); the tasks revoked."""
        report = CycleReport(leader=self.leadership.is_leader)
        if report.leader:
            self._step(report, "supervise", lambda: self._supervise(report))
            if self.on_cycle is not None and report.revoked:
                self.on_cycle(report)
        return report.revoked

    def run(self, stop: threading.Event) -> None:
        """Cycle until ``stop`` is set, supervising between cycles too, then give
        the leadership up."""
        log.info("scheduler %s standing by", self.leadership.owner)
        next_cycle = next_supervision = self.clock()
        try:
            while not stop.is_set():
                now = self.clock()
                if now >= next_cycle:
                    self.run_once()
                    next_cycle = now + self.interval
                    next_supervision = now + self.supervise_every
                elif now >= next_supervision:
                    self.supervise_between_cycles()
                    next_supervision = now + self.supervise_every
                stop.wait(max(0.0, min(next_cycle, next_supervision) - self.clock()))
        finally:
            self.leadership.resign()
