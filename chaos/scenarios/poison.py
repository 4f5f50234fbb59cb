"""The poison scenario (see :mod:`chaos.scenarios`)."""

from __future__ import annotations

from chaos.checker import CORE
from chaos.checks import poison as checks
from chaos.harness import Harness
from chaos.poison import KINDS
from chaos.scenarios.base import Context, Plan, Scenario, tasks


def poison(harness: Harness, context: Context) -> None:
    """Healthy tasks alone (the run's own baseline), drained; then as many
    again beside poison tasks."""
    plan = context.plan
    harness.faults.write("phase", name="baseline")
    harness.produce(plan.phase)
    harness.settle(plan.drain)
    harness.faults.write("phase", name="poison")
    harness.produce(plan.workloads)


HEALTHY = {"durations": (0.1, 0.3), "flaky": 0, "doomed": 0, "priorities": (0,)}
"""The poison scenario's healthy tasks: none fail, so their pace is all that varies."""
POISON_KINDS = {"poison": KINDS, "batch": 1}
QUICK_KINDS = {"poison": ("hang", "hang", *KINDS), "batch": 1}
"""The quick profile's poison: one of each kind, and two more that hang first
(a timeout kills its child while the healthy backlog is long)."""
POISON = {
    "full": Plan(
        workers=4,
        concurrency=4,
        pool="processes",
        phase=(tasks(1500, 11, **HEALTHY), tasks(1500, 12, **HEALTHY)),
        workloads=(
            tasks(1500, 13, **HEALTHY),
            tasks(1500, 14, **HEALTHY),
            tasks(20, 15, rate=1.0, **POISON_KINDS),
        ),
    ),
    "quick": Plan(
        workers=3,
        concurrency=4,
        pool="processes",
        phase=(tasks(300, 11, **HEALTHY),),
        workloads=(tasks(400, 13, **HEALTHY), tasks(7, 15, rate=5.0, **QUICK_KINDS)),
        drain=120,
    ),
}
SCENARIO = Scenario("poison", POISON, poison, checks=(*CORE, *checks.CHECKS))
