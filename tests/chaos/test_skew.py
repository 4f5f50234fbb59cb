"""The clock-skew scenario's quick profile on SQLite (on PostgreSQL in ``make
chaos``): workers at -2 h and +2 h by libfaketime, a jump, the scheduler
skewed, skewed owners SIGKILLed; and its monotonic recovery check (I9)
catching what it is there to catch: the journals of that clean run tampered with (an execution
that ran again too late, or never)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chaos.checker import Verdict
from chaos.scenarios import SCENARIOS, Outcome
from chaos.skew import LIBRARY

from tests.chaos import tampering
from tests.chaos.tampering import Records
from tests.chaos.test_scenarios import assert_clean, planned

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not LIBRARY.exists() and os.environ.get("CI") != "true",
        reason="libfaketime is not installed (apt-get install libfaketime)",
    ),
]

SCENARIO = SCENARIOS["clock-skew"]
PLAN = SCENARIO.plans["quick"]


@pytest.fixture(scope="module")
def clean_outcome(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    return tampering.quick_run("clock-skew", tmp_path_factory)


@pytest.fixture(scope="module")
def clean_run(clean_outcome: Outcome) -> Path:
    return clean_outcome.folder


def test_clock_skew(clean_outcome: Outcome) -> None:
    outcome = clean_outcome

    assert_clean(outcome)
    figures = outcome.verdict.figures
    assert 0 < figures.tasks <= planned("clock-skew")  # producers stop after the last kill
    assert figures.clocks == [
        "worker-0 -2h",
        "worker-1 +2h",
        "worker-0 jumps to +1h",
        "scheduler +2h",
    ]
    assert figures.kills == 3 * PLAN.faults
    # Every killed owner's task ran again elsewhere, within lease + cycle + poll.
    assert figures.rerun and max(figures.rerun) <= PLAN.lease + PLAN.cycle + PLAN.poll + 1.5
    assert figures.in_flight_at_kill >= figures.kills


def recheck(clean: Path, tmp_path: Path, tamper: Callable[[Records], None]) -> Verdict:
    """The checker's verdict with the records of every journal, as one list,
    tampered with."""

    def every_journal(files: dict[str, Records]) -> None:
        tamper([r for found in files.values() for r in found])

    return tampering.recheck(clean, tmp_path, SCENARIO, every_journal)


def killed_and_rerun(records: Records) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A kill of the run, and the starts that ran its in-flight tasks again, on
    a worker never killed itself (else a missing start would read as its owner
    lost in turn)."""
    kills = [r for r in records if r["k"] == "kill"]
    killed = {r["pid"] for r in kills}
    starts = [r for r in records if r["k"] == "start"]
    ended = {(r["task"], r["token"]) for r in records if r["k"] in ("end", "abandon")}
    for kill in kills:
        mine = [s for s in starts if s["pid"] == kill["pid"] and s["mono"] < kill["mono"]]
        in_flight = [s for s in mine if (s["task"], s["token"]) not in ended]
        again = [
            s
            for s in starts
            if any(s["task"] == i["task"] and s["token"] > i["token"] for i in in_flight)
        ]
        if again and not {s["pid"] for s in again} & killed:
            return kill, again
    raise AssertionError("no killed execution ran again on a worker never killed")


def test_untampered_journals_check_clean(clean_run: Path, tmp_path: Path) -> None:
    assert recheck(clean_run, tmp_path, lambda _: None).violations == []


def test_a_rerun_later_than_the_bound_is_caught(clean_run: Path, tmp_path: Path) -> None:
    def rerun_late(records: Records) -> None:
        _, again = killed_and_rerun(records)
        for start in again:  # as if the supervisor had waited 10 s more
            start["mono"] += 10.0
            for other in records:
                if other.get("task") == start["task"] and other.get("token") == start["token"]:
                    other["mono"] = start["mono"] if other["k"] == "start" else other["mono"] + 10

    verdict = recheck(clean_run, tmp_path, rerun_late)
    assert "I9" in verdict.codes()
    assert any("monotonic clock" in v.message for v in verdict.violations)


def test_a_killed_execution_never_run_again_is_caught(clean_run: Path, tmp_path: Path) -> None:
    def never_again(records: Records) -> None:
        _, again = killed_and_rerun(records)
        for start in again:  # a kind no reader knows: the line is as good as gone
            start["k"] = "erased"

    verdict = recheck(clean_run, tmp_path, never_again)
    assert any(v.code == "I9" and "never ran again" in v.message for v in verdict.violations)
