"""Helpers for the conformance suite: bring a task to any status, read events."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from tenure import Event, Lease, Status, Store, Task, TaskError
from tenure.store import NewGate, NewTask, ReserveParams

OWNER = "worker-1"


def new(topic: str = "t", name: str = "job", **fields: object) -> NewTask:
    return NewTask(topic=topic, name=name, **fields)  # type: ignore[arg-type]


def lease_of(task: Task, owner: str = OWNER) -> Lease:
    assert task.lease_token is not None, f"{task.id} holds no lease"
    return Lease(task.id, owner, task.lease_token)


def reserve_one(store: Store, owner: str = OWNER, **params: object) -> tuple[Task, Lease]:
    tasks = store.task_reserve(ReserveParams(owner=owner, **params))  # type: ignore[arg-type]
    assert len(tasks) == 1, f"expected one task, got {tasks}"
    return tasks[0], lease_of(tasks[0], owner)


def reach(store: Store, status: Status, **fields: object) -> tuple[Task, Lease | None]:
    """A new task brought to ``status`` by the ordinary operations, and the lease
    it last ran under (``None`` if it never ran)."""
    if status is Status.WAITING:  # behind a gate, whose one member is pending
        member = new(topic="reach-waiting-member")
        gate = NewGate("reach-waiting", (0,), (1,))
        return store.flow_create([member, new(topic="reach-waiting", **fields)], [gate])[1], None
    task = store.task_create(new(topic=f"reach-{status}", **fields))
    if status is Status.PENDING:
        return task, None
    if status is Status.CANCELLED:
        return store.task_cancel(task.id), None
    running, lease = reserve_one(store, topics=[task.topic])
    if status is Status.RUNNING:
        return running, lease
    if status is Status.SNOOZED:
        return store.task_snooze(lease, 60), lease
    if status is Status.DONE:
        return store.task_complete(lease, {"ok": True}), lease
    assert status is Status.FAILED
    return store.task_fail(lease, ERROR), lease


ERROR = TaskError("ValueError", "boom", "Traceback ...")


def fail_each(store: Store, topic: str, errors: list[TaskError]) -> None:
    """Reserve the task of ``topic`` and fail it with each of ``errors`` in
    turn, retried at once while attempts remain."""
    for error in errors:
        _, lease = reserve_one(store, topics=[topic])
        store.task_fail(lease, error, retry_in=0)


def last_event_cursor(store: Store) -> str | None:
    """Where a follower that has read the whole log so far would resume."""
    events = events_since(store, None)
    return events[-1].cursor if events else None


def events_since(store: Store, after: str | None) -> list[Event]:
    """Every event committed so far after ``after``. On PostgreSQL a committed
    event can be held back for a moment (while a transaction that was open when
    the read began, in any database the server cannot tell apart, is still
    open: see list_events), so read again until nothing is held back."""
    deadline = time.monotonic() + 10
    while True:
        page = store.event_page(after=after, limit=10_000)
        if not page.held_back or time.monotonic() > deadline:
            return page.events
        time.sleep(0.005)


def in_(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


class FakeClock:
    """A monotonic clock that moves only when told to: loops that take a clock
    are tested without sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
