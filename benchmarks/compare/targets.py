"""The performance targets, checked against one run of the comparison.

Each target sets a tenure measurement against a competitor's from the same run
(a ratio it must reach) or against the store's own limit (a factor it must stay
within). A target that is not met is excused only where tenure already comes
within 10% of what the store itself allows for that same work, measured in the
same run, rate against rate: one task per call at least 1/1.1 of the rate of
tenure's own statement replayed by a client that does nothing else; a bulk call
at least 1/1.1 of tenure's own bulk write with its rows made beforehand; the
producer processes at least 1/1.1 of the statement replayed by as many clients
at once. Threads of one process and the drains have no such probe, and a call's
p50 is set against the store's one-row INSERT, its limit already: nothing
excuses those.

A target missed and not excused is **out of reach** where the same probe,
standing in for tenure, misses it by more than 10% too: in that run, a client
that cost next to nothing, writing what tenure writes, would still fall short
(the rate the store allows tenure's write, set against the competitor's; for a
call's p50, tenure's statement replayed against the one-row INSERT), with room
for the probe's own noise. Such a target asks for a lighter write, not a
faster client.

The report prints a line per target and the run's JSON keeps them, so a run
says by itself which targets it meets, which it misses within the store's
limit, which lie beyond what the store allows tenure's write, and which it
misses. A run saved earlier is checked again with

    python -m benchmarks.compare.targets benchmarks/results/compare.json

which prints the same lines and exits 0 whatever they say.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks.suite.metrics import Metric
from benchmarks.suite.producers import PROCESSES, THREADS

EXCUSE_FACTOR = 1.1
"""How close to the store's own limit excuses a target not met, and how far
that limit in tenure's place must miss a goal to put it out of reach (the
probe's own noise)."""

STATUSES = ("met", "excused", "out of reach", "missed", "not measured")

CEILING_LABEL = "at the store's limit for tenure's write"
"""The line's words for a target's goal with that limit in tenure's place."""


PG, SQLITE = "tenure-postgres", "tenure-sqlite"
PGQUEUER, HUEY = "pgqueuer-postgres", "huey-sqlite"


@dataclass(frozen=True)
class Ratio:
    """``system``'s ``key`` over ``other``'s ``other_key`` (the median of each),
    which must be at least ``at_least``, or at most ``at_most``."""

    system: str
    key: str
    other: str
    other_key: str
    at_least: float | None = None
    at_most: float | None = None

    def __post_init__(self) -> None:
        if (self.at_least is None) == (self.at_most is None):
            raise ValueError("a ratio has one bound: at_least or at_most")

    def measure(self, by_system: Mapping[str, Mapping[str, Metric]]) -> float | None:
        mine = by_system.get(self.system, {}).get(self.key)
        theirs = by_system.get(self.other, {}).get(self.other_key)
        if mine is None or theirs is None or theirs.median == 0:
            return None
        return mine.median / theirs.median

    def holds(self, value: float) -> bool:
        if self.at_least is not None:
            return value >= self.at_least
        return self.at_most is not None and value <= self.at_most

    def loosened(self, factor: float) -> Ratio:
        """This ratio with its bound ``factor`` times easier to hold."""
        if self.at_least is not None:
            return replace(self, at_least=self.at_least / factor)
        assert self.at_most is not None  # a ratio has one bound
        return replace(self, at_most=self.at_most * factor)

    @property
    def needed(self) -> str:
        return f">= {self.at_least:.2f}" if self.at_least is not None else f"<= {self.at_most:.2f}"


@dataclass(frozen=True)
class Target:
    """What is asked (``goal``), what would excuse a miss (``excuse``), and the
    goal with the store's limit for tenure's work in tenure's place
    (``ceiling``): missed too, the target is out of reach of tenure's write."""

    name: str
    goal: Ratio
    excuse: Ratio | None = None
    excuse_label: str = ""
    ceiling: Ratio | None = None


_Enqueue = tuple[str, str, str, str, float, str, str]
"""An enqueue target: what, tenure's system, the other's, the metric, the
least ratio, the store's limit for that work and what that limit is."""


def _enqueue(spec: _Enqueue) -> Target:
    """tenure's enqueue rate at least so many times the other's, excused
    within 10% of the rate the store's own limit for that work allows, out of
    reach where that limit's rate is short of the goal by more than 10%."""
    what, system, other, key, at_least, limit, of = spec
    return Target(
        f"{what}: tenure / {other}",
        Ratio(system, key, other, key, at_least=at_least),
        Ratio(system, key, system, limit, at_least=1.0).loosened(EXCUSE_FACTOR),
        f"rate / {of}",
        Ratio(system, limit, other, key, at_least=at_least).loosened(EXCUSE_FACTOR),
    )


def _latency(system: str, store: str) -> Target:
    """Against the store's limit itself: nothing excuses a miss; out of reach
    where tenure's statement replayed alone is over the bound by more than 10%."""
    insert, bound = "limit.insert.p50", 1.2
    statement = Ratio(system, "limit.task_insert.p50", system, insert, at_most=bound)
    return Target(
        f"{store}, 1 task per call: p50 / the store's one-row INSERT",
        Ratio(system, "enqueue.single.p50", system, insert, at_most=bound),
        ceiling=statement.loosened(EXCUSE_FACTOR),
    )


def _drain(system: str, other: str, key: str, label: str) -> Target:
    return Target(f"drain, {label}: tenure / {other}", Ratio(system, key, other, key, at_least=2.5))


_OWN, _BULK = "tenure's own statement replayed", "tenure's own bulk write"
_THREADS, _PROCESSES = f"enqueue.threads_{THREADS}", f"enqueue.processes_{PROCESSES}"
_ENQUEUES: tuple[_Enqueue, ...] = (
    ("PostgreSQL, 1 task per call", PG, PGQUEUER, "enqueue.single", 1.5, "limit.task_insert", _OWN),
    ("SQLite, 1 task per call", SQLITE, HUEY, "enqueue.single", 1.25, "limit.task_insert", _OWN),
    ("PostgreSQL, 1 call of many", PG, PGQUEUER, "enqueue.bulk", 1.0, "limit.task_bulk", _BULK),
    ("SQLite, 1 call of many", SQLITE, HUEY, "enqueue.bulk", 10.0, "limit.task_bulk", _BULK),
    (f"PostgreSQL, {PROCESSES} processes, 1 per call", PG, PGQUEUER, _PROCESSES, 1.5,
     f"limit.task_insert_{PROCESSES}", f"{_OWN} by {PROCESSES} clients"),
)  # fmt: skip

TARGETS: tuple[Target, ...] = (
    *map(_enqueue, _ENQUEUES),
    Target(
        f"PostgreSQL, {THREADS} threads, 1 per call: tenure / {PGQUEUER}",
        Ratio(PG, _THREADS, PGQUEUER, _THREADS, at_least=1.5),
    ),
    _latency(PG, "PostgreSQL"),
    _latency(SQLITE, "SQLite"),
    *(
        _drain(PG, PGQUEUER, f"drain.workers_{n}{c}", f"{n} worker process{'es' * (n > 1)}{at}")
        for c, at in (("", ""), ("_c10", ", concurrency 10"))
        for n in (1, 2)
    ),
    *(
        _drain(SQLITE, HUEY, f"drain.workers_1{c}", f"1 worker process{at}")
        for c, at in (("", ""), ("_c10", ", concurrency 10"))
    ),
)


def evaluate(
    results: Mapping[str, Sequence[Metric]], targets: Sequence[Target] = TARGETS
) -> list[dict[str, Any]]:
    """Each target as the run's medians answer it: ``status`` is ``met``,
    ``excused`` (missed, within 10% of the store's own limit), ``out of
    reach`` (missed, and the store's limit for tenure's write misses it too),
    ``missed``, or ``not measured`` (a system or measurement absent from the
    run)."""
    by_system = {name: {m.key: m for m in metrics} for name, metrics in results.items()}
    return [_answer(target, by_system) for target in targets]


def _answer(target: Target, by_system: Mapping[str, Mapping[str, Metric]]) -> dict[str, Any]:
    """``target``'s row of :func:`evaluate`."""
    value = target.goal.measure(by_system)
    row: dict[str, Any] = {"target": target.name, "needed": target.goal.needed, "measured": value}
    if value is None:
        row["status"] = "not measured"
    elif target.goal.holds(value):
        row["status"] = "met"
    else:
        excused = _record(row, "excuse", target.excuse, target.excuse_label, by_system)
        reachable = _record(row, "ceiling", target.ceiling, CEILING_LABEL, by_system)
        if excused:
            row["status"] = "excused"
        elif reachable is False:  # None: no ceiling, or not measured: nothing says so
            row["status"] = "out of reach"
        else:
            row["status"] = "missed"
    return row


def _record(
    row: dict[str, Any],
    field: str,
    ratio: Ratio | None,
    what: str,
    by_system: Mapping[str, Mapping[str, Metric]],
) -> bool | None:
    """``ratio`` measured and kept in ``row[field]``; whether it holds
    (``None``: no such ratio, or not measured)."""
    if ratio is None:
        return None
    measured = ratio.measure(by_system)
    row[field] = {"what": what, "needed": ratio.needed, "measured": measured}
    return None if measured is None else ratio.holds(measured)


def lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """:func:`evaluate`'s rows for people, a line each, then a count by status."""
    out = []
    for row in rows:
        measured = "-" if row["measured"] is None else f"{row['measured']:.2f}"
        line = f"{row['status']}: {row['target']} {measured} ({row['needed']})"
        for field, says in (("excuse", "excuses"), ("ceiling", "within reach")):
            beside = row.get(field)
            if beside is not None:
                limit = "-" if beside["measured"] is None else f"{beside['measured']:.2f}"
                line += f"; {beside['what']} {limit} ({beside['needed']} {says})"
        out.append(line)
    counts = [(sum(row["status"] == status for row in rows), status) for status in STATUSES]
    out.append("targets: " + ", ".join(f"{n} {status}" for n, status in counts if n))
    return out


def results_of(document: Mapping[str, Any]) -> dict[str, list[Metric]]:
    """The metrics of a run's JSON (``report.results_json``), by system."""
    results: dict[str, list[Metric]] = {}
    for row in document["results"]:
        metric = Metric(
            row["key"],
            row["label"],
            row["unit"],
            row["higher_is_better"],
            row["samples"],
            row.get("params", {}),
        )
        results.setdefault(row["system"], []).append(metric)
    return results


def main(argv: Sequence[str]) -> int:
    """Check the run saved in the JSON file ``argv[0]`` against the targets."""
    usage = "usage: python -m benchmarks.compare.targets RUN.json"
    if argv in (["-h"], ["--help"]):
        print(f"{usage}\n\nChecks a saved run of make bench-compare against the targets.")
        return 0
    if len(argv) != 1:
        print(usage, file=sys.stderr)
        return 2
    try:
        document = json.loads(Path(argv[0]).read_text())
        rows = evaluate(results_of(document))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        why = f"no {exc} in a result" if isinstance(exc, KeyError) else str(exc)
        print(f"cannot read a comparison run from {argv[0]}: {why}", file=sys.stderr)
        return 1
    print("\n".join(lines(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
