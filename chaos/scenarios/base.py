"""What every scenario is made of: its :class:`Plan` per profile, the
:class:`Context` its injection runs in, and the helpers injections share."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from chaos.cluster import PrivateCluster
from chaos.harness import Harness, Processes
from chaos.producers import Workload

Profile = Literal["full", "quick"]
STORES = ("sqlite", "postgres")
PRIORITIES = (0, 5, 10)
SHORT = (0.05, 0.3)
"""Durations of the short tasks that run around a scenario's faults."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan(Processes):
    """A scenario's numbers in one profile: how its processes run (the fields
    of :class:`~chaos.harness.Processes`), what the producers enqueue, how many
    faults (per kind) come how often, and how long the drain may take."""

    workloads: tuple[Workload, ...]
    faults: int = 0
    every: tuple[float, float] = (2.0, 5.0)
    drain: float = 600.0
    phase: tuple[Workload, ...] = ()
    """A first phase (baseline), drained before ``workloads`` come."""
    app: str | None = None
    """The App the workers and schedulers load, if not the probe's."""


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


def found(harness: Harness, look: Callable[[], list[int]], timeout: float = 30) -> list[int]:
    """The pids ``look`` returns once it returns some; none once the queue is
    empty for good (or after ``timeout``)."""
    found: list[int] = []

    def seen() -> bool:
        found[:] = look()
        return bool(found) or (harness.producers_done() and harness.unfinished() == 0)

    harness.wait_for(seen, "a worker in the middle of a task", timeout, fail=False)
    return found
