"""The scheduler-election scenario's quick profile on SQLite (on PostgreSQL in
``make chaos``), and its checks catching what they are there to catch: the
evidence of that clean run is tampered with (a slot missing from the store, a slot created twice, a
failover slower than leader lease + one cycle) and the checker names exactly
that promise."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from chaos.checker import Bounds, Verdict, check
from chaos.election import slot_of
from chaos.evidence import Evidence, gather
from chaos.scenarios import SCENARIOS, Outcome

from tenure.store import open_store
from tests.chaos import tampering
from tests.chaos.test_scenarios import assert_clean, planned

pytestmark = pytest.mark.slow

SCENARIO = SCENARIOS["scheduler-election"]
PLAN = SCENARIO.plans["quick"]


@pytest.fixture(scope="module")
def clean_outcome(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    return tampering.quick_run("scheduler-election", tmp_path_factory)


@pytest.fixture(scope="module")
def clean_run(clean_outcome: Outcome) -> Path:
    return clean_outcome.folder


def test_scheduler_election(clean_outcome: Outcome) -> None:
    outcome = clean_outcome

    assert_clean(outcome)
    figures = outcome.verdict.figures
    assert figures.tasks == planned("scheduler-election")
    # The leader was killed once and paused once; another took over each time,
    # within leader lease + one cycle, and the periodic task went on, once a slot.
    assert (figures.kills, figures.pauses) == (1, 1)
    assert len(figures.failover) == 2 and max(figures.failover) <= 2.0 + 0.5 + 0.25
    assert figures.slots > 0 and figures.missing_slots == 0


def recheck(clean: Path, tamper: Callable[[Evidence], None]) -> Verdict:
    with open_store(f"sqlite:///{clean / 'chaos.db'}") as store:
        evidence = gather(clean / "journals", store)
    tamper(evidence)
    return check(evidence, Bounds(PLAN), SCENARIO.checks)


def slot_ids(evidence: Evidence) -> list[str]:
    return sorted(i for i in evidence.tasks if slot_of(i) is not None)  # ISO times sort


def test_untampered_evidence_checks_clean(clean_run: Path) -> None:
    verdict = recheck(clean_run, lambda _: None)
    assert verdict.violations == []
    assert verdict.figures.slots > 0 and len(verdict.figures.failover) == 2


def test_a_missing_slot_is_caught(clean_run: Path) -> None:
    def drop_a_slot(evidence: Evidence) -> None:
        ids = slot_ids(evidence)
        missing = ids[len(ids) // 2]
        del evidence.tasks[missing]
        evidence.events.pop(missing, None)
        evidence.executions.pop(missing, None)
        evidence.acks = [a for a in evidence.acks if a.task != missing]

    verdict = recheck(clean_run, drop_a_slot)
    assert verdict.codes() == {"S"}
    assert verdict.figures.missing_slots == 1


def test_a_slot_enqueued_twice_is_caught(clean_run: Path) -> None:
    def create_a_slot_again(evidence: Evidence) -> None:
        events = evidence.events[slot_ids(evidence)[-1]]
        created = next(e for e in events if e.from_status is None)
        events.insert(1, dataclasses.replace(created, id=created.id + 10**9))

    assert recheck(clean_run, create_a_slot_again).codes() == {"S"}


def test_a_slow_failover_is_caught(clean_run: Path) -> None:
    def see_the_new_leader_late(evidence: Evidence) -> None:
        deposed, elected, seen = evidence.elections[0]
        evidence.elections[0] = (deposed, elected, seen + PLAN.leader_lease)

    verdict = recheck(clean_run, see_the_new_leader_late)
    assert verdict.codes() == {"E"}
