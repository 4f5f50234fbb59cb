"""The unique-torture scenario's quick profile on SQLite (on PostgreSQL, where
workers are paused too, in ``make chaos``), and its checks (L1 to L4) catching
what they are there to catch: the evidence of that clean run is tampered with,
one promise at a time (two holders of one lock, a rolled-back task stored, a
strategy not as documented, a lock left behind), and the checker names that
promise."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta
from itertools import pairwise

import pytest
from chaos.checker import Verdict
from chaos.checks.unique import OVERLAP, unique_tasks
from chaos.evidence import Evidence, gather
from chaos.journal import read_folder
from chaos.scenarios import SCENARIOS, Outcome
from chaos.unique import FINAL, ROLLED_BACK, rule_of

from tenure.store import open_store
from tenure.task import Status
from tests.chaos import tampering
from tests.chaos.test_scenarios import assert_clean

pytestmark = pytest.mark.slow

SCENARIO = SCENARIOS["unique-torture"]
PLAN = SCENARIO.plans["quick"]
RULES = 7
"""Task names of chaos.unique: every lock phase with every strategy it allows."""


@pytest.fixture(scope="module")
def clean_outcome(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    return tampering.quick_run("unique-torture", tmp_path_factory)


def test_unique_torture(clean_outcome: Outcome) -> None:
    outcome = clean_outcome

    assert_clean(outcome)
    figures = outcome.verdict.figures
    # On SQLite only killed, never paused (see chaos.scenarios.unique).
    assert (figures.kills, figures.pauses) == (2, 0)
    # Every task name on every key was contended for, and locks held at start
    # settled some starts (a reschedule at least).
    assert figures.unique_keys == RULES * PLAN.workloads[0].keys
    assert figures.settled.get("reschedule", 0) > 0
    kinds = [r["k"] for r in read_folder(outcome.folder / "journals").records]
    assert kinds.count("rolled-back") > 0
    assert kinds.count("enq-rejected") + kinds.count("enq-raised") > 0
    assert "final-refused" not in kinds


@pytest.fixture(scope="module")
def clean(clean_outcome: Outcome) -> Evidence:
    folder = clean_outcome.folder
    with open_store(f"sqlite:///{folder / 'chaos.db'}") as store:
        return gather(folder / "journals", store)


def recheck(clean: Evidence, tamper: Callable[[Evidence], None]) -> Verdict:
    return tampering.recheck_evidence(clean, SCENARIO, tamper)


def held_until_executed(ev: Evidence, task_id: str) -> float | None:
    """For how long (store clock) the task held an until_executed lock, if it did."""
    events = ev.events[task_id]
    if (rule_of(ev.tasks[task_id].name) or ("",))[0] != "until_executed":
        return None
    return (events[-1].at - events[0].at).total_seconds()


def test_untampered_evidence_checks_clean(clean: Evidence) -> None:
    assert recheck(clean, lambda _: None).violations == []


def test_two_holders_of_one_lock_are_caught(clean: Evidence) -> None:
    def take_the_lock_early(ev: Evidence) -> None:
        # A final task enqueued as soon as a task of its key that held an
        # until_executed lock: both hold the lock at once, and for longer than
        # L1's slack on the store's clock (either ending is moved later if it
        # came sooner: the task may have been short, or begun less than the
        # slack before the final task ended).
        tasks = unique_tasks(ev).values()
        held = {t.id: held_until_executed(ev, t.id) for t in tasks if not t.id.startswith(FINAL)}
        first = max((t for t in tasks if held.get(t.id) is not None), key=lambda t: held[t.id])
        final = next(
            t
            for t in tasks
            if t.id.startswith(FINAL) and (t.name, t.unique_key) == (first.name, first.unique_key)
        )
        began = ev.events[first.id][0]
        late = began.at + timedelta(seconds=OVERLAP + 1.0)
        for holder in (first.id, final.id):
            ended = ev.events[holder][-1]
            if ended.at < late:
                ev.events[holder][-1] = dataclasses.replace(ended, at=late)
        created = ev.events[final.id][0]
        ev.log.remove(created.cursor)
        ev.log.insert(ev.log.index(began.cursor) + 1, created.cursor)
        ev.events[final.id][0] = dataclasses.replace(created, at=began.at)

    assert recheck(clean, take_the_lock_early).codes() == {"L1"}


def test_a_rolled_back_task_in_the_store_is_caught(clean: Evidence) -> None:
    def keep_a_rolled_back_task(ev: Evidence) -> None:
        task = next(t for t in ev.tasks.values() if t.status is Status.DONE)
        ev.tasks[f"{ROLLED_BACK}x"] = dataclasses.replace(task, id=f"{ROLLED_BACK}x")

    assert "L2" in recheck(clean, keep_a_rolled_back_task).codes()


def test_a_reschedule_that_spends_an_attempt_is_caught(clean: Evidence) -> None:
    def spend_the_attempt(ev: Evidence) -> None:
        for task in unique_tasks(ev).values():
            if not task.name.endswith(".reschedule"):
                continue
            events = ev.events[task.id]
            for i, (start, after) in enumerate(pairwise(events)):
                if start.to_status is Status.RUNNING and after.at == start.at:
                    events[i + 1] = dataclasses.replace(after, attempt=start.attempt)
                    return
        raise AssertionError("no rescheduled start in the clean run")

    assert recheck(clean, spend_the_attempt).codes() == {"L3"}


def test_a_lock_left_behind_is_caught(clean: Evidence) -> None:
    def refuse_a_final_task(ev: Evidence) -> None:
        final = next(t for t in ev.tasks.values() if t.id.startswith(FINAL))
        del ev.tasks[final.id]
        ev.events.pop(final.id, None)
        ev.executions.pop(final.id, None)
        ev.acks = [a for a in ev.acks if a.task != final.id]

    assert recheck(clean, refuse_a_final_task).codes() == {"L4"}
