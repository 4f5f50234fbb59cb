"""The poison scenario's checks catch what they are there to catch: the
journals of the clean quick poison run are tampered with, one promise at a time (an
attempt that died without being counted, a task stopped short of its maximum,
healthy tasks slowed beside the poison), and the checker names exactly that
promise."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from chaos.checker import Verdict
from chaos.scenarios import SCENARIOS, Outcome, Plan, run, tasks

from tests.chaos import tampering
from tests.chaos.tampering import Records

pytestmark = pytest.mark.slow

SCENARIO = SCENARIOS["poison"]
POOL_BUG = Plan(
    workers=1,
    concurrency=4,
    pool="processes",
    phase=(tasks(20, 31, durations=(0.02, 0.06), flaky=0, doomed=0),),
    workloads=(
        tasks(300, 32, durations=(0.02, 0.06), flaky=0, doomed=0),
        tasks(4, 33, batch=4, poison=("hang",)),
    ),
    drain=120,
)


@pytest.fixture(scope="module")
def clean_run(poison: Outcome) -> Path:
    assert not poison.verdict.violations, poison.line()
    assert poison.verdict.figures.deaths == 15
    return poison.folder


def recheck(clean: Path, tmp_path: Path, tamper: Callable[[dict[str, Records]], None]) -> Verdict:
    return tampering.recheck(clean, tmp_path, SCENARIO, tamper)


def every(files: dict[str, Records], kind: str) -> Records:
    return [r for records in files.values() for r in records if r["k"] == kind]


def test_untampered_journals_check_clean(clean_run: Path, tmp_path: Path) -> None:
    assert recheck(clean_run, tmp_path, lambda _: None).violations == []


def test_a_death_not_counted_as_an_attempt_is_caught(clean_run: Path, tmp_path: Path) -> None:
    def die_twice_as_one_attempt(files: dict[str, Records]) -> None:
        segv = next(r for r in every(files, "poison") if r["kind"] == "segv" and r["attempt"] == 2)
        segv["attempt"] = 1

    verdict = recheck(clean_run, tmp_path, die_twice_as_one_attempt)
    assert verdict.codes() == {"D"}


def test_a_task_run_past_its_maximum_is_caught(clean_run: Path, tmp_path: Path) -> None:
    def run_a_fourth_time(files: dict[str, Records]) -> None:
        last = next(r for r in every(files, "poison") if r["kind"] == "exit" and r["attempt"] == 3)
        next(records for records in files.values() if last in records).append(
            {**last, "attempt": 4, "token": last["token"] + 1}
        )

    assert recheck(clean_run, tmp_path, run_a_fourth_time).codes() == {"D"}


def test_healthy_tasks_slowed_beside_poison_are_caught(clean_run: Path, tmp_path: Path) -> None:
    def slow_the_last_healthy_task(files: dict[str, Records]) -> None:
        poison_phase = next(r for r in every(files, "phase") if r["name"] == "poison")["mono"]
        ends = [r for r in every(files, "end") if r["mono"] > poison_phase]
        max(ends, key=lambda r: r["mono"])["mono"] += 60.0

    verdict = recheck(clean_run, tmp_path, slow_the_last_healthy_task)
    assert verdict.codes() == {"T"}
    assert verdict.figures.throughput is not None


def test_a_neighbours_timeout_costs_no_healthy_task_an_attempt(tmp_path: Path) -> None:
    outcome = run("poison", "sqlite", "quick", tmp_path, plan=POOL_BUG)

    assert outcome.verdict.figures.poison == 4
    never_started = [v for v in outcome.verdict.violations if v.code == "I4"]
    assert not never_started, "\n".join(str(v) for v in never_started)
