"""Every allowed and every forbidden transition, through the operations that make them.

For each operation and each status a task can be in: if the operation is allowed
from that status it must land in its target status and log exactly that event;
otherwise it must be refused (or match nothing) and change nothing at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tenure import InvalidTransition, Lease, LeaseError, Status, Store, Task, TaskNotFound
from tenure.store import ReserveParams, TaskFilter
from tenure.task import CANCELLABLE, RETRYABLE, TRANSITIONS
from tests.conformance.support import ERROR, OWNER, events_since, last_event_cursor, reach

Apply = Callable[[Store, Task, Lease], "Task | None"]


def _reserve(store: Store, task: Task, _: Lease) -> Task | None:
    found = store.task_reserve(ReserveParams(owner=OWNER, topics=[task.topic]))
    return found[0] if found else None


def _open_gate(store: Store, task: Task, _: Lease) -> Task | None:
    """Cancel the members of the gate ``task`` waits behind (a flow's task)."""
    if task.gate_in is None:
        return None
    members = store.task_list(TaskFilter(topic="reach-waiting-member")).tasks
    for member in members:
        store.task_cancel(member.id)
    return store.task_get(task.id)


@dataclass(frozen=True)
class Op:
    apply: Apply
    target: Status
    allowed_from: frozenset[Status]


RUNNING_ONLY = frozenset({Status.RUNNING})
OPS: dict[str, Op] = {
    "open-gate": Op(_open_gate, Status.PENDING, frozenset({Status.WAITING})),
    "reserve": Op(_reserve, Status.RUNNING, frozenset({Status.PENDING})),
    "complete": Op(lambda s, t, lease: s.task_complete(lease, 1), Status.DONE, RUNNING_ONLY),
    "fail": Op(lambda s, t, lease: s.task_fail(lease, ERROR), Status.FAILED, RUNNING_ONLY),
    "fail-retry": Op(
        lambda s, t, lease: s.task_fail(lease, ERROR, retry_in=0), Status.PENDING, RUNNING_ONLY
    ),
    "snooze": Op(lambda s, t, lease: s.task_snooze(lease, 5), Status.SNOOZED, RUNNING_ONLY),
    "release": Op(lambda s, t, lease: s.task_release(lease), Status.PENDING, RUNNING_ONLY),
    "revoke": Op(
        lambda s, t, lease: s.task_revoke(t.id, t.record_ver),
        Status.PENDING,
        frozenset({Status.RUNNING, Status.SNOOZED}),
    ),
    "cancel": Op(lambda s, t, lease: s.task_cancel(t.id), Status.CANCELLED, CANCELLABLE),
    "retry": Op(lambda s, t, lease: s.task_retry(t.id), Status.PENDING, RETRYABLE),
}
CASES = [(name, status) for name in OPS for status in Status]


def test_operations_cover_exactly_the_transition_table() -> None:
    made = {(src, op.target) for op in OPS.values() for src in op.allowed_from}
    made.add((Status.RUNNING, Status.FAILED))  # also by revoke when no attempt is left
    table = {(src, dst) for src, targets in TRANSITIONS.items() for dst in targets}
    assert made == table


@pytest.mark.parametrize(("op_name", "status"), CASES, ids=[f"{o}-from-{s}" for o, s in CASES])
def test_transition(store: Store, op_name: str, status: Status) -> None:
    op = OPS[op_name]
    task, lease = reach(store, status, max_attempts=3)
    lease = lease or Lease(task.id, OWNER, task.record_ver)
    before = last_event_cursor(store)
    if status in op.allowed_from:
        assert op.target in TRANSITIONS[status]
        after = op.apply(store, task, lease)
        assert after is not None and after.status is op.target
        assert after.record_ver > task.record_ver
        [event] = [e for e in events_since(store, before) if e.task_id == task.id]
        assert (event.task_id, event.from_status, event.to_status) == (task.id, status, op.target)
        # The event names the task as it is after the transition: its topic and
        # name, its attempt count, and the worker holding (or last holding) it.
        assert (event.topic, event.name) == (task.topic, task.name)
        assert (event.attempt, event.owner) == (after.attempts, after.assignee)
        assert after.updated_at is not None
        assert abs((event.at - after.updated_at).total_seconds()) < 1e-3
        assert store.task_get(task.id) == after
    else:
        try:
            result = op.apply(store, task, lease)
        except (InvalidTransition, LeaseError, TaskNotFound):
            pass
        else:
            assert result is None, f"{op_name} from {status} was allowed"
        assert store.task_get(task.id) == task
        assert events_since(store, before) == []
