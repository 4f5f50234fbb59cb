"""The chaos suite's quick profile: real workers, producers and a scheduler,
real SIGKILL and SIGSTOP, a real PostgreSQL crash; then the checker over the
journals and the store. Every promise must hold (no violation) and the figures
must say the faults really happened.

The baseline runs on both stores; each fault scenario runs on one store here,
to keep the suite short, and on both in ``make chaos``: the sigkill storm and
poison on SQLite, the zombie on PostgreSQL (whose crash runs on a private
cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest
from chaos.scenarios import SCENARIOS, Outcome, run

pytestmark = pytest.mark.slow


def planned(name: str) -> int:
    plan = SCENARIOS[name].plans["quick"]
    return sum(workload.count for workload in (*plan.phase, *plan.workloads))


def assert_clean(outcome: Outcome) -> None:
    shown = "\n".join(str(v) for v in outcome.verdict.violations[:20])
    raised = "\n".join(f"{name}: {error}" for name, error in outcome.verdict.unknown.items())
    explained = f"{outcome.line()}\n{shown}{raised}\n{outcome.folder}"
    assert outcome.verdict.valid is True, explained
    figures = outcome.verdict.figures
    assert (figures.lost, figures.dup_endings) == (0, 0)
    assert figures.stored >= figures.tasks > 0


def test_baseline(backend: str, store_url: str, tmp_path: Path) -> None:
    outcome = run("baseline", backend, "quick", tmp_path, url=store_url)

    assert_clean(outcome)
    figures = outcome.verdict.figures
    assert figures.tasks == planned("baseline")
    assert (figures.kills, figures.pauses, figures.dup_executions) == (0, 0, 0)


def test_sigkill_storm(storm: Outcome) -> None:
    outcome = storm

    assert_clean(outcome)
    figures = outcome.verdict.figures
    assert figures.tasks == planned("sigkill-storm")
    assert figures.kills == SCENARIOS["sigkill-storm"].plans["quick"].faults
    # Each kill landed in the middle of a task, which ran again elsewhere.
    assert figures.in_flight_at_kill >= figures.kills
    assert figures.dup_executions >= 1
    assert figures.recovery and max(figures.recovery) <= 2.0 + 0.5 + 0.1 + 1.5


@pytest.mark.parametrize("backend", ["postgres"])
def test_zombie(backend: str, store_url: str, tmp_path: Path) -> None:
    outcome = run("zombie", backend, "quick", tmp_path, url=store_url)

    assert_clean(outcome)
    figures = outcome.verdict.figures
    assert figures.pauses == 1
    # The paused owner's long task was taken back and run again by another...
    assert figures.recovery and figures.dup_executions >= 1
    # ...and the owner, once resumed, gave its execution up within a keepalive.
    assert figures.abandon and max(figures.abandon) <= 2.0 / 3


def test_pg_crash_on_a_private_cluster(cluster_binaries: Path, tmp_path: Path) -> None:
    outcome = run("pg-crash", "postgres", "quick", tmp_path)

    assert_clean(outcome)
    figures = outcome.verdict.figures
    assert figures.restarts == 2  # -m immediate, then -m fast
    assert figures.worker_recovery and max(figures.worker_recovery) <= 10
    assert len(figures.listen) == 2 and max(figures.listen) <= 10


def test_poison(poison: Outcome) -> None:
    outcome = poison

    assert_clean(outcome)
    figures = outcome.verdict.figures
    assert figures.tasks == planned("poison")
    # Two tasks that hang, one of each other kind; each stopped at its three
    # attempts, every death counted.
    assert figures.poison == 7
    assert figures.poison_kinds == {"exit": 3, "hang": 9, "memory": 3, "raise": 3, "segv": 3}
    assert figures.deaths == 15
    assert figures.throughput is not None
    before, beside = figures.throughput
    assert beside >= 0.8 * before
