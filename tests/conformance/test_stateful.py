"""A hypothesis state machine drives a store against a small model of the protocol.

The model knows only statuses, attempts, the current lease token and the number
of transitions. Every holder write is tried with any lease ever granted, current
or stale: the model predicts success exactly when the task is running under that
very token, and otherwise the store must refuse and change nothing.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tenure import Lease, Status, Store, TaskError, TenureError, open_store
from tenure.store import NewTask, ReserveParams
from tenure.store.validate import MAX_RESERVE_LIMIT
from tests.conftest import _empty_postgres


def committed_events(store: Store, expected: int, patience: float = 5.0) -> list[Any]:
    """The event log, read again while it shows fewer than ``expected`` events
    (up to ``patience`` seconds): on PostgreSQL a listing stops short of events
    whose transaction a snapshot still showed running (one just ending, or one
    the server's other sessions left unexplained), and gets them a moment later."""
    deadline = time.monotonic() + patience
    while True:
        events = store.event_list(limit=10_000)
        if len(events) >= expected or time.monotonic() > deadline:
            return events
        time.sleep(0.01)


ERROR = TaskError("E", "boom")


@dataclass(frozen=True)
class Model:
    status: Status
    attempts: int
    max_attempts: int
    token: int | None = None
    priority: int = 0


class StoreMachine(RuleBasedStateMachine):
    open_fresh: Callable[[], Store]

    def __init__(self) -> None:
        super().__init__()
        self.store = self.open_fresh()
        self.tasks: dict[str, Model] = {}
        self.order: list[str] = []  # creation order = reserve order at equal priority
        self.leases: list[Lease] = []  # every lease ever granted
        self.transitions = 0

    def teardown(self) -> None:
        self.store.close()

    def _moved(self, task_id: str, status: Status, **changes: Any) -> None:
        self.tasks[task_id] = replace(self.tasks[task_id], status=status, **changes)
        self.transitions += 1

    @rule(count=st.integers(1, 3), max_attempts=st.integers(1, 3))
    def create(self, count: int, max_attempts: int) -> None:
        created = self.store.task_create_many(
            [NewTask(topic="t", name="n", max_attempts=max_attempts) for _ in range(count)]
        )
        for task in created:
            self.tasks[task.id] = Model(Status.PENDING, 0, max_attempts)
            self.order.append(task.id)
            self.transitions += 1

    @rule(limit=st.integers(1, 3))
    def reserve(self, limit: int) -> None:
        got = self.store.task_reserve(ReserveParams(owner="w", limit=limit))
        pending = [i for i in self.order if self.tasks[i].status is Status.PENDING]
        pending.sort(key=lambda i: -self.tasks[i].priority)  # stable: oldest first within
        assert [t.id for t in got] == pending[:limit]
        for task in got:
            assert task.lease_token is not None
            self.leases.append(Lease(task.id, "w", task.lease_token))
            attempts = self.tasks[task.id].attempts + 1
            self._moved(task.id, Status.RUNNING, attempts=attempts, token=task.lease_token)

    def _holds(self, lease: Lease) -> bool:
        model = self.tasks[lease.task_id]
        return model.status is Status.RUNNING and model.token == lease.token

    def _holder_write(self, lease: Lease, write: Callable[[], Any]) -> bool:
        """Run a holder write; check it succeeds exactly when the model says so."""
        before = self.store.task_get(lease.task_id)
        if self._holds(lease):
            write()
            return True
        with pytest.raises(TenureError):
            write()
        assert self.store.task_get(lease.task_id) == before
        return False

    @precondition(lambda self: self.leases)
    @rule(data=st.data())
    def complete(self, data: st.DataObject) -> None:
        lease = data.draw(st.sampled_from(self.leases))
        if self._holder_write(lease, lambda: self.store.task_complete(lease, 1)):
            self._moved(lease.task_id, Status.DONE)

    @precondition(lambda self: self.leases)
    @rule(data=st.data(), retry=st.booleans())
    def fail(self, data: st.DataObject, retry: bool) -> None:
        lease = data.draw(st.sampled_from(self.leases))
        model = self.tasks[lease.task_id]
        retry_in = 0.0 if retry else None
        if self._holder_write(lease, lambda: self.store.task_fail(lease, ERROR, retry_in=retry_in)):
            if retry and model.attempts < model.max_attempts:
                self._moved(lease.task_id, Status.PENDING, priority=model.priority - 1)
            else:
                self._moved(lease.task_id, Status.FAILED)

    @precondition(lambda self: self.leases)
    @rule(data=st.data())
    def snooze(self, data: st.DataObject) -> None:
        lease = data.draw(st.sampled_from(self.leases))
        attempts = self.tasks[lease.task_id].attempts - 1
        if self._holder_write(lease, lambda: self.store.task_snooze(lease, 30)):
            self._moved(lease.task_id, Status.SNOOZED, attempts=attempts)

    @precondition(lambda self: self.leases)
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        lease = data.draw(st.sampled_from(self.leases))
        attempts = self.tasks[lease.task_id].attempts - 1
        if self._holder_write(lease, lambda: self.store.task_release(lease)):
            self._moved(lease.task_id, Status.PENDING, attempts=attempts)

    @precondition(lambda self: self.leases)
    @rule(data=st.data())
    def extend(self, data: st.DataObject) -> None:
        lease = data.draw(st.sampled_from(self.leases))
        self._holder_write(lease, lambda: self.store.lease_extend(lease, 30))

    @precondition(lambda self: self.tasks)
    @rule(data=st.data(), stale=st.booleans())
    def revoke(self, data: st.DataObject, stale: bool) -> None:
        task_id = data.draw(st.sampled_from(self.order))
        current = self.store.task_get(task_id)
        assert current is not None
        record_ver = current.record_ver if not stale else max(1, current.record_ver - 1)
        stale = stale and record_ver != current.record_ver
        result = self.store.task_revoke(task_id, record_ver)
        model = self.tasks[task_id]
        if stale or model.status not in (Status.RUNNING, Status.SNOOZED):
            assert result is None
            return
        lost_last = model.status is Status.RUNNING and model.attempts >= model.max_attempts
        self._moved(task_id, Status.FAILED if lost_last else Status.PENDING, token=None)
        assert result is not None and result.status is self.tasks[task_id].status

    @precondition(lambda self: self.tasks)
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        task_id = data.draw(st.sampled_from(self.order))
        if self.tasks[task_id].status in (Status.PENDING, Status.RUNNING, Status.SNOOZED):
            self.store.task_cancel(task_id)
            self._moved(task_id, Status.CANCELLED, token=None)
        else:
            with pytest.raises(TenureError):
                self.store.task_cancel(task_id)

    @precondition(lambda self: self.tasks)
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        task_id = data.draw(st.sampled_from(self.order))
        if self.tasks[task_id].status in (Status.FAILED, Status.CANCELLED):
            self.store.task_retry(task_id)
            self._moved(task_id, Status.PENDING, attempts=0, token=None)
        else:
            with pytest.raises(TenureError):
                self.store.task_retry(task_id)

    @rule()
    def fold_tallies(self) -> None:
        self.store.tally_fold(compact=True)

    @invariant()
    def store_matches_model(self) -> None:
        # Every task in one listing (a read per task made this check most of the
        # run on PostgreSQL): the store holds the model's tasks, and no others.
        page = self.store.task_list(limit=MAX_RESERVE_LIMIT)
        assert page.cursor is None
        stored = {task.id: (task.status, task.attempts) for task in page.tasks}
        assert stored == {
            task_id: (model.status, model.attempts) for task_id, model in self.tasks.items()
        }
        assert len(committed_events(self.store, self.transitions)) == self.transitions
        # One entry into a status counted for each transition, folded or not.
        entries = self.store.task_transition_totals().get("t", {})
        assert sum(entries.values()) == self.transitions
        # The tallies that stats and metrics read agree with the tasks, folded or not.
        expected: dict[Status, int] = {}
        for model in self.tasks.values():
            expected[model.status] = expected.get(model.status, 0) + 1
        assert self.store.task_stats().counts == ({"t": expected} if expected else {})


def test_store_follows_the_model(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    counter = itertools.count()
    if backend == "sqlite":

        def open_fresh() -> Store:
            return open_store(f"sqlite:///{tmp_path / f'model-{next(counter)}.db'}")

    else:
        url: str = request.getfixturevalue("postgres_url")

        def open_fresh() -> Store:
            _empty_postgres(url)
            return open_store(url)

    machine = type("Machine", (StoreMachine,), {"open_fresh": staticmethod(open_fresh)})
    machine.TestCase.settings = settings(
        max_examples=100,
        stateful_step_count=30,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    run_state_machine_as_test(machine, settings=machine.TestCase.settings)
