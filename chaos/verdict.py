"""What the checker answers: the :class:`Bounds` a run is checked against, each
:class:`Violation` it finds and the run's :class:`Figures`; one :class:`Result`
per :class:`Check`, and their composition, the run's :class:`Verdict`.

A module of its own so that the checks kept beside their scenarios
(:mod:`chaos.checks`) share them without importing the checker.

Checks compose as Jepsen's checkers do: each check writes into a result of its
own, and a check that raises reads ``unknown`` (its exception kept as the
result's ``error``) while every other check's result still counts. The verdict
is valid when every result is; invalid when any is; ``unknown`` otherwise.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from chaos.evidence import Evidence
    from chaos.harness import Processes

MARGIN = 1.5
"""Seconds added to the I8 and I9 bound on a loaded machine (starved processes,
slow fsyncs)."""
SLACK = 0.25
"""Seconds an execution's own record may come after its lease was given up."""


@dataclass(frozen=True, slots=True)
class Bounds:
    """What a run is checked against: the time bounds derive from how its
    ``processes`` ran (leases, cycles, polls), with room for a loaded machine."""

    processes: Processes
    margin: float = MARGIN
    slack: float = SLACK
    server_recovery: float = 10.0
    throughput: float = 0.8
    """T: the healthy throughput beside poison tasks, as a share of baseline's."""

    @property
    def lease(self) -> float:
        return self.processes.lease

    @property
    def cycle(self) -> float:
        return self.processes.cycle

    @property
    def poll(self) -> float:
        return self.processes.poll

    @property
    def leader_lease(self) -> float:
        """E: the schedulers' leader lease, which failover is bounded by."""
        return self.processes.leader_lease

    @property
    def keepalive(self) -> float:
        return self.lease / 3

    @property
    def recovery(self) -> float:
        """I8 and I9: lease + supervisor cycle + poll (+ margin)."""
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
    """I9: seconds from a kill or cut to the run elsewhere, on the monotonic clock."""
    cuts: int = 0
    resume: list[float] = field(default_factory=list)
    """Per cut, seconds from the heal to the cut-off worker's next task."""
    unique_keys: int = 0
    """L: the unique tasks' locks (task name and key) the run contended for."""
    settled: dict[str, int] = field(default_factory=dict)
    """L: starts settled by a held lock, per conflict strategy."""

    def merge(self, other: Figures) -> None:
        """Add ``other``'s figures to these: each figure is measured by one
        check, or counted by several (counts add up, samples join)."""
        for name in (f.name for f in fields(self)):
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, list):
                mine.extend(theirs)
            elif isinstance(mine, dict):
                for key, count in theirs.items():
                    mine[key] = mine.get(key, 0) + count
            elif isinstance(mine, int):
                setattr(self, name, mine + theirs)
            elif theirs is not None:
                setattr(self, name, theirs)


Valid = Literal[True, False, "unknown"]
"""A result's answer: every promise held, one did not, or the check could not say."""
UNKNOWN: Literal["unknown"] = "unknown"


@dataclass(slots=True)
class Result:
    """One check's answer: the violations it found, each under one of the codes
    it holds (``codes``), and the figures it measured; or, if it raised,
    ``error`` and nothing else."""

    codes: tuple[str, ...]
    violations: list[Violation] = field(default_factory=list)
    figures: Figures = field(default_factory=Figures)
    error: str | None = None

    @property
    def valid(self) -> Valid:
        return UNKNOWN if self.error is not None else not self.violations

    def add(self, code: str, task: str | None, message: str) -> None:
        """A violation of ``code``, which must be one this check holds: a code
        names one check, wherever it is read."""
        if code not in self.codes:
            raise ValueError(f"{code} is not a code of this check ({', '.join(self.codes)})")
        self.violations.append(Violation(code, task, message))


@dataclass(frozen=True, slots=True)
class Check:
    """A named check of a run: ``body`` reads the evidence against the bounds
    and writes what it finds into the :class:`Result` it is given."""

    name: str
    codes: tuple[str, ...]
    body: Callable[[Evidence, Bounds, Result], None]

    def run(self, evidence: Evidence, bounds: Bounds) -> Result:
        """This check's own result; ``unknown`` if it raised (what it had
        found by then is dropped: half a check is no answer)."""
        result = Result(self.codes)
        try:
            self.body(evidence, bounds, result)
        except Exception as exc:
            return Result(self.codes, error=_described(exc))
        return result


def _described(exc: Exception) -> str:
    """The exception and the line that raised it, in one line."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """Every check's result, by the check's name, and the figures of those
    that answered."""

    results: dict[str, Result] = field(default_factory=dict)
    figures: Figures = field(default_factory=Figures)

    @property
    def violations(self) -> list[Violation]:
        return [v for result in self.results.values() for v in result.violations]

    @property
    def unknown(self) -> dict[str, str]:
        """The checks that raised: name → what they raised."""
        return {name: r.error for name, r in self.results.items() if r.error is not None}

    @property
    def valid(self) -> Valid:
        """False if any check found a violation, else unknown if any raised, else True."""
        answers = {result.valid for result in self.results.values()}
        return False if False in answers else UNKNOWN if UNKNOWN in answers else True

    def codes(self) -> set[str]:
        return {v.code for v in self.violations}


def compose(checks: Iterable[Check], evidence: Evidence, bounds: Bounds) -> Verdict:
    """Run every check on its own, then put their results together."""
    results: dict[str, Result] = {}
    for check in checks:
        if check.name in results:
            raise ValueError(f"two checks named {check.name}")
        results[check.name] = check.run(evidence, bounds)
    figures = Figures()
    for result in results.values():
        figures.merge(result.figures)
    return Verdict(results, figures)
