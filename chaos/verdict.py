"""What the checker answers: the :class:`Bounds` a run is checked against, each
:class:`Violation` it finds and the run's :class:`Figures`, together its
:class:`Verdict`. A module of its own so that the checks kept beside their
scenarios (:mod:`chaos.deaths`, :mod:`chaos.locks` ...) share them without
importing the checker."""

from __future__ import annotations

from dataclasses import dataclass, field

MARGIN = 1.5
"""Seconds added to the I8 bound on a loaded machine (starved processes, slow fsyncs)."""
SLACK = 0.25
"""Seconds an execution's own record may come after its lease was given up."""


@dataclass(frozen=True, slots=True)
class Bounds:
    """The scenario's settings that the time bounds derive from."""

    lease: float
    cycle: float
    poll: float
    margin: float = MARGIN
    slack: float = SLACK
    server_recovery: float = 10.0
    throughput: float = 0.8
    """T: the healthy throughput beside poison tasks, as a share of baseline's."""
    leader_lease: float = 10.0
    """E: the schedulers' leader lease, which failover is bounded by."""

    @property
    def keepalive(self) -> float:
        return self.lease / 3

    @property
    def recovery(self) -> float:
        """I8: lease + supervisor cycle + poll (+ margin)."""
        return self.lease + self.cycle + self.poll + self.margin


@dataclass(frozen=True, slots=True)
class Violation:
    code: str
    task: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.code} {self.task or '-'}: {self.message}"


@dataclass(slots=True)
class Figures:
    tasks: int = 0
    stored: int = 0
    kills: int = 0
    pauses: int = 0
    restarts: int = 0
    lost: int = 0
    dup_endings: int = 0
    dup_executions: int = 0
    in_flight_at_kill: int = 0
    abandoned: int = 0
    recovery: list[float] = field(default_factory=list)
    abandon: list[float] = field(default_factory=list)
    worker_recovery: list[float] = field(default_factory=list)
    listen: list[float] = field(default_factory=list)
    poison: int = 0
    deaths: int = 0
    poison_kinds: dict[str, int] = field(default_factory=dict)
    throughput: tuple[float, float] | None = None
    """T: healthy tasks a second (baseline phase, poison phase)."""
    slots: int = 0
    missing_slots: int = 0
    failover: list[float] = field(default_factory=list)
    followers: int = 0
    follower_kills: int = 0
    delivered: int = 0
    """Events journaled by the followers, all slots together."""
    undelivered: int = 0
    redelivered: int = 0
    lag: list[float] = field(default_factory=list)
    """Per delivery, seconds from the event's time in the store to the follower."""
    clocks: list[str] = field(default_factory=list)
    """The clock changes of a skew scenario (``worker-0 -2h`` …)."""
    rerun: list[float] = field(default_factory=list)
    """I8 on the monotonic clock: seconds from a kill or cut to the run elsewhere."""
    cuts: int = 0
    resume: list[float] = field(default_factory=list)
    """Per cut, seconds from the heal to the cut-off worker's next task."""
    unique_keys: int = 0
    """L: the unique tasks' locks (task name and key) the run contended for."""
    settled: dict[str, int] = field(default_factory=dict)
    """L: starts settled by a held lock, per conflict strategy."""


@dataclass(slots=True)
class Verdict:
    figures: Figures = field(default_factory=Figures)
    violations: list[Violation] = field(default_factory=list)

    def add(self, code: str, task: str | None, message: str) -> None:
        self.violations.append(Violation(code, task, message))

    def codes(self) -> set[str]:
        return {v.code for v in self.violations}
