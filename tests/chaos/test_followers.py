"""The event followers' checks catch what they are there to catch: the clean
quick sigkill-storm run with followers (SIGKILLed and resumed) is checked
again with its followers' journals tampered with, one way at a time (an event
dropped, two events swapped, an event delivered twice across a resume, a
follower that resumed past an event, an event the log never had), and the
checker names exactly that promise: F for delivery, G for order. Also: a
follower resumes after its last whole line, and I7 judges a task whose enqueue
was in doubt (committed as the server crashed) by its first priority."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from chaos.checker import Bounds, Verdict, check
from chaos.evidence import Evidence, Execution
from chaos.follower import PREFIX, journal_path, position
from chaos.scenarios import SCENARIOS, Outcome

from tenure.task import Status, Task
from tests.chaos import tampering
from tests.chaos.tampering import Records

pytestmark = pytest.mark.slow

SCENARIO = SCENARIOS["sigkill-storm"]
PLAN = SCENARIO.plans["quick"]
BOUNDS = Bounds(PLAN)


@pytest.fixture(scope="module")
def clean_run(storm: Outcome) -> Path:
    outcome = storm
    figures = outcome.verdict.figures
    assert not outcome.verdict.violations, outcome.line()
    assert (figures.followers, figures.follower_kills) == (2, PLAN.faults // 2)
    assert figures.kills == PLAN.faults  # the followers' kills are not workers'
    assert figures.delivered > 0 and figures.undelivered == figures.redelivered == 0
    return outcome.folder


def recheck(clean: Path, tmp_path: Path, tamper: Callable[[Records], None]) -> Verdict:
    """The checker's verdict with the journal of the slot that was killed tampered with."""

    def killed_slot(files: dict[str, Records]) -> None:
        tamper(
            next(
                records
                for name, records in files.items()
                if name.startswith(PREFIX) and len(resumes(records)) > 1
            )
        )

    return tampering.recheck(clean, tmp_path, SCENARIO, killed_slot)


def resumes(records: Records) -> list[int]:
    return [i for i, r in enumerate(records) if r["k"] == "resume"]


def second_life(records: Records) -> int:
    """The index of the record where the slot's second life resumed."""
    return resumes(records)[1]


def test_untampered_journals_check_clean(clean_run: Path, tmp_path: Path) -> None:
    assert recheck(clean_run, tmp_path, lambda _: None).violations == []


def test_a_dropped_event_is_caught(clean_run: Path, tmp_path: Path) -> None:
    def drop_one(records: Records) -> None:
        del records[second_life(records) // 2]

    verdict = recheck(clean_run, tmp_path, drop_one)
    assert verdict.codes() == {"F", "G"}
    assert verdict.figures.undelivered == 1


def test_two_events_swapped_are_caught(clean_run: Path, tmp_path: Path) -> None:
    def swap_two(records: Records) -> None:
        middle = second_life(records) // 2
        records[middle], records[middle + 1] = records[middle + 1], records[middle]

    verdict = recheck(clean_run, tmp_path, swap_two)
    assert verdict.codes() == {"G"}
    assert verdict.figures.undelivered == 0


def test_an_event_delivered_again_after_a_resume_is_caught(clean_run: Path, tmp_path: Path) -> None:
    def deliver_the_last_again(records: Records) -> None:
        resumed = second_life(records)
        records.insert(resumed + 1, {**records[resumed - 1], "mono": records[resumed]["mono"]})

    verdict = recheck(clean_run, tmp_path, deliver_the_last_again)
    assert verdict.codes() == {"G"}
    assert verdict.figures.redelivered == 1


def test_a_gap_after_a_resume_is_caught(clean_run: Path, tmp_path: Path) -> None:
    def skip_the_first_after_resuming(records: Records) -> None:
        del records[second_life(records) + 1]

    assert recheck(clean_run, tmp_path, skip_the_first_after_resuming).codes() == {"F", "G"}


def test_a_follower_that_never_followed_is_caught(clean_run: Path, tmp_path: Path) -> None:
    verdict = recheck(clean_run, tmp_path, lambda records: records.clear())

    assert verdict.codes() == {"F"}
    assert any("never followed" in v.message for v in verdict.violations)


def test_an_event_the_log_never_had_is_caught(clean_run: Path, tmp_path: Path) -> None:
    def deliver_a_phantom(records: Records) -> None:
        middle = second_life(records) // 2
        records.insert(middle, {**records[middle], "cursor": "0.999999999"})

    assert recheck(clean_run, tmp_path, deliver_a_phantom).codes() == {"F"}


def test_a_follower_resumes_after_its_last_whole_line(tmp_path: Path) -> None:
    path = journal_path(tmp_path, 0)
    assert position(path) is None
    seen = {"k": "seen", "slot": 0, "cursor": "0.7", "task": "t", "to": "done", "attempt": 1}
    cut = json.dumps({**seen, "cursor": "0.8"})[:30]  # killed in the middle of a write
    path.write_text(json.dumps(seen) + "\n" + cut)

    assert position(path) == "0.7"


def test_an_enqueue_in_doubt_is_held_to_its_first_priority_not_its_last() -> None:
    # pg-crash: an enqueue that committed as the server went down raised to its
    # producer, so no priority is on record; its retries lowered it 10, 9, 8.
    task = Task("t", "chaos", "probe", Status.FAILED, priority=8, attempts=3, max_attempts=3)
    runs = [Execution("t", n, n, "vm:1:a", 1, 11 - n, float(n), float(n) + 0.5) for n in (1, 2, 3)]
    evidence = Evidence(executions={"t": runs}, tasks={"t": task})

    assert check(evidence, BOUNDS).results["priority"].violations == []
    runs[2].priority = 10  # a retry that did rise is still caught
    assert {v.code for v in check(evidence, BOUNDS).results["priority"].violations} == {"I7"}
