"""The connection-kills scenario's quick profile (PostgreSQL, a database of
its own), and its promises checked: the evidence of a clean run is tampered
with, and the checker tells an enqueue that raised after its COMMIT (its task
stored, never acknowledged: neither lost nor a duplicate) from one journaled as
returned and never stored (lost), and a worker that did not come back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from chaos.checker import Verdict
from chaos.evidence import Evidence, gather
from chaos.scenarios import SCENARIOS, Outcome, run
from chaos.sessions import summary

from tenure.store import open_store
from tests.chaos import tampering
from tests.chaos.test_scenarios import assert_clean

pytestmark = pytest.mark.slow

SCENARIO = SCENARIOS["connection-kills"]
PLAN = SCENARIO.plans["quick"]


@dataclass(frozen=True, slots=True)
class CleanRun:
    outcome: Outcome
    evidence: Evidence


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> CleanRun:
    folder = tmp_path_factory.mktemp("connections")
    # A database of its own, dropped afterwards: only its sessions are ended.
    url: str = request.getfixturevalue("postgres_url").rsplit("/", 1)[0]
    admin = f"{url}/postgres"
    import psycopg

    name = f"tenure_chaos_{folder.name.replace('-', '_')[-20:]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        outcome = run("connection-kills", "postgres", "quick", folder, url=f"{url}/{name}")
        with open_store(f"{url}/{name}") as store:
            evidence = gather(folder / "journals", store)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return CleanRun(outcome, evidence)


def test_connection_kills(clean: CleanRun) -> None:
    assert_clean(clean.outcome)
    counts = summary(clean.outcome.folder / "journals")
    # Every burst ended sessions, most of them in the middle of a statement
    # (an enqueue, a reservation, an ending on its way to its COMMIT).
    assert counts["all"] >= PLAN.faults
    busy = sum(n for k, n in counts.items() if k in ("state:active", "state:idle in transaction"))
    assert busy >= PLAN.faults
    assert counts["role:worker"] > 0 and counts["role:producer"] > 0
    # After each burst every worker listened and worked again, by itself.
    listen = clean.outcome.verdict.figures.listen
    assert len(listen) == PLAN.faults and max(listen) <= 10


def recheck(clean: CleanRun, tamper: Callable[[Evidence], None]) -> Verdict:
    return tampering.recheck_evidence(clean.evidence, SCENARIO, tamper)


def test_untampered_evidence_checks_clean(clean: CleanRun) -> None:
    assert recheck(clean, lambda _: None).violations == []


def test_an_enqueue_that_raised_after_its_commit_is_neither_lost_nor_a_duplicate(
    clean: CleanRun,
) -> None:
    def raise_after_commit(ev: Evidence) -> None:
        # Its producer never journaled it (the call raised): the task is in
        # the store all the same.
        for task_id in list(ev.enqueued)[:5]:
            del ev.enqueued[task_id]

    verdict = recheck(clean, raise_after_commit)
    assert verdict.violations == []
    assert (verdict.figures.lost, verdict.figures.dup_endings) == (0, 0)
    assert verdict.figures.stored == verdict.figures.tasks + 5 + (
        clean.outcome.verdict.figures.stored - clean.outcome.verdict.figures.tasks
    )


def test_an_enqueue_journaled_as_returned_and_never_stored_is_lost(clean: CleanRun) -> None:
    def journal_a_raised_enqueue(ev: Evidence) -> None:
        ev.enqueued["never-committed"] = 0

    verdict = recheck(clean, journal_a_raised_enqueue)
    assert verdict.codes() == {"I2"} and verdict.figures.lost == 1


def test_a_worker_that_does_not_come_back_is_caught(clean: CleanRun) -> None:
    def stay_away(ev: Evidence) -> None:
        ev.listening[0] = None

    assert recheck(clean, stay_away).codes() == {"R"}
