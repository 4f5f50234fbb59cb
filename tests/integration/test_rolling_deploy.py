"""A rolling deploy, with real worker processes on each store: a worker of the old
code gives a task of a name only the new code knows back, without spending its
attempt, until a new worker runs it; a name no worker knows fails after the
unknown-name grace, naming the task and the names the worker knows."""

from __future__ import annotations

import re

import pytest

from tenure import Status, Store, Task
from tenure.store import NewTask
from tenure.store.types import Event
from tests.apps import rolling
from tests.integration.workers import WorkerProcess, wait_for, wait_until

pytestmark = pytest.mark.slow

OLD, NEW = "tests.apps.rolling:old", "tests.apps.rolling:new"
GIVEN_BACK = "no task of this name is registered in this worker"


def owner_of(worker: WorkerProcess) -> str:
    started = worker.wait_for_log("started: store=")
    found = re.search(r"worker (\S+) started", started)
    assert found is not None, started
    return found.group(1)


def events_of(store: Store, task_id: str) -> list[Event]:
    return [e for e in store.event_list(limit=10_000) if e.task_id == task_id]


def snoozed_by(store: Store, task_id: str, owner: str) -> int:
    """How many times ``owner`` gave the task back (a snooze is how it does)."""
    return sum(
        1
        for e in events_of(store, task_id)
        if (e.from_status, e.to_status, e.owner) == (Status.RUNNING, Status.SNOOZED, owner)
    )


def create(store: Store, name: str, value: int = 0) -> Task:
    data = {"args": [value], "kwargs": {}} if name == rolling.ADDED else None
    return store.task_create(NewTask(rolling.TOPIC, name, data=data))


def test_an_unknown_name_is_given_back_and_run_by_a_worker_that_knows_it(
    store: Store, store_url: str, workers: list[WorkerProcess]
) -> None:
    old = WorkerProcess(store_url, app=OLD)
    workers.append(old)
    tasks = [create(store, rolling.ADDED, i) for i in range(5)]
    old_owner = owner_of(old)
    # Only the old worker runs: each task is given back, again and again, never failed.
    wait_for(
        lambda: all(snoozed_by(store, t.id, old_owner) >= 2 for t in tasks),
        "the old worker gave every task back twice",
    )
    for task in tasks:
        now = store.task_get(task.id)
        assert now is not None and not now.finished, now
        assert now.attempts == 0 or now.status is Status.RUNNING, now

    new = WorkerProcess(store_url, app=NEW)
    workers.append(new)
    done = [wait_until(store, t.id, lambda t: t.finished) for t in tasks]
    for i, task in enumerate(done):
        assert task.status is Status.DONE, task
        assert task.result == {"value": i, "pid": new.pid}
        assert task.attempts == 1  # one attempt, the new worker's: none spent by the old
        assert not any(e.to_status is Status.FAILED for e in events_of(store, task.id))
    assert old.process.poll() is None and new.process.poll() is None
    # Told at INFO, once per name per minute: not once per task given back.
    lines = [line for line in old.lines if GIVEN_BACK in line]
    assert len(lines) == 1, lines
    assert rolling.ADDED in lines[0]


def test_a_name_no_worker_knows_fails_after_the_grace(
    store: Store, store_url: str, workers: list[WorkerProcess]
) -> None:
    old = WorkerProcess(store_url, app=OLD, env={"TENURE_UNKNOWN_NAME_GRACE": "2"})
    workers.append(old)
    old_owner = owner_of(old)
    task = create(store, rolling.NOBODY)
    failed = wait_until(store, task.id, lambda t: t.finished, timeout=30)
    assert failed.status is Status.FAILED and failed.attempts == 1
    assert failed.error is not None and failed.error.type == "UnknownTask"
    assert f"no task named {rolling.NOBODY!r}" in failed.error.message
    assert "(known: rolling.ping)" in failed.error.message
    assert "grace: 2s" in failed.error.message
    assert snoozed_by(store, task.id, old_owner) >= 1  # given back first
    assert failed.created_at is not None and failed.finished_at is not None
    assert (failed.finished_at - failed.created_at).total_seconds() >= 2
    old.wait_for_log("failed for good")
    assert old.process.poll() is None
