"""The scheduler-election scenario (see :mod:`chaos.scenarios`): three
scheduler candidates; the elected one is SIGKILLed or SIGSTOPped in turn
(paused for two leader leases, then resumed), while its periodic task should
be enqueued once a slot whoever leads."""

from __future__ import annotations

from chaos import ChaosError
from chaos.checker import CORE
from chaos.checks import election as checks
from chaos.election import APP
from chaos.harness import Harness
from chaos.scenarios.base import Context, Plan, Scenario, tasks

ELECTED_WITHIN = 30.0
"""Seconds the harness waits for a new leader before it gives up (the checker
holds the bound: leader lease + one cycle)."""


def election(harness: Harness, context: Context) -> None:
    plan = context.plan
    harness.produce(plan.workloads)
    for number in range(plan.faults):
        context.interval()
        _depose(harness, context, paused=number % 2 == 1)
    context.wait(2 * plan.cycle)  # a slot or two after the last failover
    harness.retire("scheduler")  # no slot comes after the drain


def _depose(harness: Harness, context: Context, *, paused: bool) -> None:
    """Kill or pause the elected scheduler; wait until another is elected and
    write it down; resume the paused one after a leader lease."""
    harness.wait_for(lambda: harness.leader() is not None, "a scheduler elected", ELECTED_WITHIN)
    leader = harness.leader()
    if leader is None:
        raise ChaosError("the elected scheduler exited as it was chosen")
    (harness.pause if paused else harness.kill)(leader)
    harness.wait_for(
        lambda: harness.leader() not in (None, leader), "another scheduler elected", ELECTED_WITHIN
    )
    harness.faults.write("elected", pid=harness.leader(), after=leader)
    if paused:  # the old leader comes back to a lost leadership
        context.wait(context.plan.leader_lease)
        harness.resume(leader)


ELECTION = {
    "full": Plan(
        workers=3,
        concurrency=4,
        workloads=(tasks(2000, 16, durations=(0.05, 0.3), rate=20),),
        faults=12,
        every=(3.0, 6.0),
        schedulers=3,
        leader_lease=2.0,
    ),
    "quick": Plan(
        workers=2,
        concurrency=4,
        workloads=(tasks(100, 16, durations=(0.05, 0.3), rate=15),),
        faults=2,
        every=(1.0, 2.0),
        schedulers=3,
        leader_lease=2.0,
        drain=120,
    ),
}
SCENARIO = Scenario(
    "scheduler-election", ELECTION, election, app=APP, checks=(*CORE, *checks.CHECKS)
)
