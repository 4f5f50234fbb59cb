"""What every scenario is made of: a :class:`Scenario` carries its
:class:`Plan` per profile, its injection (run in a :class:`Context`), the App
its processes load, its target, its checks and its own figures; and the
helpers injections share."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from chaos import ChaosError
from chaos.checker import CORE
from chaos.cluster import PrivateCluster
from chaos.harness import APP, Harness, Processes
from chaos.producers import Workload
from chaos.verdict import Check, Figures

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
Target = Callable[
    [str, Path, str | None], AbstractContextManager[tuple[str, PrivateCluster | None]]
]
"""(store, folder, url) → while open: the store's URL, and the private cluster
it lives on, if the scenario made one."""
OwnFigures = Callable[[Path, Figures], str]
"""(journals, the checks' figures) → the scenario's own, for the end of its line."""


@contextmanager
def own_store(store: str, folder: Path, url: str | None) -> Iterator[tuple[str, None]]:
    """The usual target: on SQLite a file in ``folder``; on PostgreSQL the
    empty database at ``url``."""
    if store == "sqlite":
        yield f"sqlite:///{folder.resolve() / 'chaos.db'}", None
    elif url is None:
        raise ChaosError("on PostgreSQL, a scenario needs the URL of an empty database")
    else:
        yield url, None


def no_figures(_: Path, __: Figures) -> str:
    return ""


@dataclass(frozen=True, slots=True)
class Scenario:
    """One scenario, whole: its name, its plan per profile and what it injects;
    the stores it runs on, the App its processes load (``app``), what it runs
    against (``target``: the store, or a cluster or a disk of its own), the
    checks its run is held to, and its own figures (read from its journals
    while they exist: a clean run's folder may be removed before its line is
    printed)."""

    name: str
    plans: dict[str, Plan]
    inject: Inject
    stores: tuple[str, ...] = STORES
    app: str = APP
    target: Target = own_store
    checks: tuple[Check, ...] = CORE
    figures: OwnFigures = no_figures


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
