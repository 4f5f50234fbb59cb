"""A task whose name the worker does not know (a rolling deploy): given back for a
short pause measured on the store's clock, failed after the grace, told sparingly."""

from __future__ import annotations

import logging
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tenure import Lease, Status, Task, open_store
from tenure.hooks import Hooks, Outcome
from tenure.registry import Registry
from tenure.store.types import TaskState
from tenure.worker.held import Held
from tenure.worker.runner import Raised, Snoozed
from tenure.worker.telling import Teller
from tenure.worker.unknown import PAUSE_MAX, PAUSE_MIN, UnknownNames, pause, waited
from tests.apps import rolling

CREATED = datetime(2026, 1, 1, tzinfo=UTC)


def reserved(name: str, after: float, run_at: datetime | None = None) -> Task:
    """A task of ``name`` reserved ``after`` seconds past its creation (store's clock)."""
    started = CREATED + timedelta(seconds=after)
    return Task(
        id="t1",
        topic=rolling.TOPIC,
        name=name,
        status=Status.RUNNING,
        attempts=1,
        created_at=CREATED,
        run_at=run_at,
        started_at=started,
    )


def test_the_wait_runs_from_when_the_task_was_due_by_the_store_clock() -> None:
    assert waited(reserved("x", 90)) == 90
    assert waited(reserved("x", 90, run_at=CREATED + timedelta(seconds=60))) == 30


def test_the_pause_is_short_at_first_and_longer_for_a_task_that_waits_long() -> None:
    rand = random.Random(1)
    early = [pause(0, rand) for _ in range(200)]
    late = [pause(3600, rand) for _ in range(200)]
    assert min(early) >= PAUSE_MIN and max(early) <= PAUSE_MIN * 1.5
    assert min(late) >= PAUSE_MAX and max(late) <= PAUSE_MAX * 1.5
    assert len(set(early)) > 100  # spread: the old workers' snoozes do not fall due together


def test_known_names_run_unknown_ones_are_given_back_then_failed() -> None:
    names = UnknownNames(rolling.old.registry, grace=600)
    assert names.ending(reserved("rolling.ping", 5)) is None
    given_back = names.ending(reserved(rolling.ADDED, 599))
    assert isinstance(given_back, Snoozed) and given_back.unknown is not None
    assert given_back.unknown.type == "UnknownTask"
    failed = names.ending(reserved(rolling.ADDED, 600))
    assert isinstance(failed, Raised) and failed.final
    assert failed.error.message.startswith(
        "no task named 'rolling.added' is registered in this worker (known: rolling.ping)"
    )
    assert "in the 600s since it was due (unknown-name grace: 600s)" in failed.error.message


def test_no_grace_fails_at_once() -> None:
    assert isinstance(UnknownNames(Registry(), grace=0).ending(reserved("x", 0)), Raised)


def test_one_line_per_name_per_minute_and_the_hooks_see_a_snooze(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    names = UnknownNames(rolling.old.registry, grace=600)
    seen: list[Outcome] = []
    hooks = Hooks()
    hooks.add("snoozed", seen.append)
    with open_store(f"sqlite:///{tmp_path / 't.db'}") as store:
        teller = Teller(store, hooks, names.tell)  # not started: tells inline
        with caplog.at_level(logging.INFO, logger="tenure.worker"):
            for name in (rolling.ADDED, rolling.ADDED, rolling.ADDED, rolling.NOBODY):
                task = reserved(name, 1)
                ending = names.ending(task)
                assert isinstance(ending, Snoozed)
                state = TaskState(task.id, Status.SNOOZED, 0, 3)
                teller.ended(Held(task, Lease(task.id, "w", 1)), ending, state, None)
    lines = [r.getMessage() for r in caplog.records if "given back" in r.getMessage()]
    assert [rolling.ADDED in line for line in lines] == [True, False]  # one per name
    assert [o.kind for o in seen] == ["snoozed"] * 4
    assert all(o.error is not None and o.error.type == "UnknownTask" for o in seen)
