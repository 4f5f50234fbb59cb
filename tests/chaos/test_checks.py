"""The checks compose: each answers with a result of its own, so a check that
raises reads ``unknown`` and every other check's result still counts, and a
code names one check. On evidence made by hand (no process runs): a queue that
did not drain (I1) and a task whose priority rose (I7)."""

from __future__ import annotations

from collections import defaultdict

import pytest
from chaos.checker import CORE, EVERY, Bounds, check
from chaos.evidence import Evidence
from chaos.harness import Processes
from chaos.scenarios import SCENARIOS
from chaos.verdict import Check, Result

from tenure.task import Status, Task

BOUNDS = Bounds(Processes(lease=2.0, cycle=0.5, poll=0.1))


def broken() -> Evidence:
    """A run that did not drain, with a task whose priority rose from 5 to 10."""
    task = Task("t", "chaos", "probe", Status.FAILED, priority=10, attempts=3, max_attempts=3)
    return Evidence(tasks={"t": task}, enqueued={"t": 5}, drained=False)


def divide_by_zero(_: Evidence, __: Bounds, out: Result) -> None:
    out.add("X", None, "found before raising")
    out.figures.kills += 1 // 0


def test_a_check_that_raises_reads_unknown_and_every_other_still_counts() -> None:
    raising = Check("raising", ("X",), divide_by_zero)
    alone = check(broken(), BOUNDS)

    verdict = check(broken(), BOUNDS, [*EVERY[:3], raising, *EVERY[3:]])

    assert list(verdict.results) == [c.name for c in EVERY[:3]] + ["raising"] + [
        c.name for c in EVERY[3:]
    ]
    assert verdict.results["raising"].valid == "unknown"
    assert verdict.unknown.keys() == {"raising"}
    assert "ZeroDivisionError" in verdict.unknown["raising"]
    # What it found before it raised is no answer: not a violation, no figure.
    assert verdict.results["raising"].violations == []
    # Every other check answered as it does without the raising one.
    others = {name: result for name, result in verdict.results.items() if name != "raising"}
    assert others == alone.results
    assert verdict.results["finished"].valid is False
    assert verdict.results["priority"].valid is False
    assert verdict.codes() == {"I1", "I7"}
    assert verdict.figures == alone.figures
    assert (verdict.figures.tasks, verdict.figures.kills) == (1, 0)
    # A violation found outranks a check that could not say.
    assert verdict.valid is False


def test_evidence_one_check_cannot_read_costs_only_that_check() -> None:
    evidence = broken()
    evidence.deliveries = {0: [{"k": "seen", "slot": 0}]}  # a follower's line without its cursor

    verdict = check(evidence, BOUNDS)

    assert verdict.unknown.keys() == {"deliveries"}
    assert "KeyError" in verdict.unknown["deliveries"]
    assert verdict.codes() == {"I1", "I7"}
    assert all(r.error is None for name, r in verdict.results.items() if name != "deliveries")


def test_a_run_is_valid_only_if_every_check_answered_valid() -> None:
    clean = Evidence(drained=True)
    assert check(clean, BOUNDS).valid is True

    raising = Check("raising", ("X",), divide_by_zero)
    verdict = check(clean, BOUNDS, [*CORE, raising])

    assert verdict.violations == []
    assert verdict.valid == "unknown"  # no violation found, and yet not a pass


def test_a_check_may_write_only_its_own_codes() -> None:
    def borrow_a_code(_: Evidence, __: Bounds, out: Result) -> None:
        out.add("I8", None, "a check that is not I8's")

    verdict = check(Evidence(drained=True), BOUNDS, [Check("borrower", ("Q",), borrow_a_code)])

    assert verdict.valid == "unknown"
    assert "not a code of this check" in verdict.unknown["borrower"]


def test_every_code_names_one_check() -> None:
    owners: dict[str, list[str]] = defaultdict(list)
    for one in EVERY:
        for code in one.codes:
            owners[code].append(one.name)

    assert {code: names for code, names in owners.items() if len(names) > 1} == {}
    assert len({one.name for one in EVERY}) == len(EVERY)
    # I8 times recovery on the store's clock, I9 on the monotonic clock.
    assert (owners["I8"], owners["I9"]) == (["recovery"], ["reruns"])


def test_two_checks_of_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="two checks named finished"):
        check(Evidence(), BOUNDS, [CORE[0], CORE[0]])


def test_every_scenario_is_held_to_the_core_and_every_check_to_a_scenario() -> None:
    for scenario in SCENARIOS.values():
        assert scenario.checks[: len(CORE)] == CORE, scenario.name

    carried = {one.name for scenario in SCENARIOS.values() for one in scenario.checks}
    assert carried == {one.name for one in EVERY}
