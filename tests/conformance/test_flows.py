"""Flows: tasks created with gates between them. A gate opens in the
transaction of its last member's ending and gives the tasks behind it every
member's outcome; in mode all_done it breaks at a member failed or cancelled,
cancelling everything behind it. Every store decides the same."""

from __future__ import annotations

from typing import Any

import pytest

from tenure import InvalidInput, Status, Store, Task
from tenure.store import NewGate
from tenure.task import GateMode, GateShape
from tests.conformance.support import (
    ERROR,
    events_since,
    in_,
    last_event_cursor,
    new,
    reserve_one,
)


def member(index: int, **fields: Any) -> Any:
    """A task of its own topic, so that a test reserves exactly the one it means."""
    return new(topic=f"m{index}", **fields)


def complete(store: Store, index: int, result: Any = None) -> Task:
    _, lease = reserve_one(store, topics=[f"m{index}"])
    return store.task_complete(lease, result)


def fail(store: Store, index: int) -> Task:
    _, lease = reserve_one(store, topics=[f"m{index}"])
    return store.task_fail(lease, ERROR)


def group_with_callback(store: Store, size: int) -> tuple[list[Task], Task, str]:
    """``size`` members (topics m0…) and a callback (topic m{size}) behind them."""
    gate = NewGate(f"gate-{size}", tuple(range(size)), (size,))
    created = store.flow_create([member(i) for i in range(size + 1)], [gate])
    return created[:size], created[size], gate.id


def test_a_callback_waits_then_gets_every_outcome_once_all_have_ended(store: Store) -> None:
    members, callback, gate_id = group_with_callback(store, 3)
    assert [m.status for m in members] == [Status.PENDING] * 3
    assert callback.status is Status.WAITING and callback.gate_in == gate_id
    complete(store, 0, {"n": 1})
    fail(store, 1)
    assert store.task_get(callback.id).status is Status.WAITING  # type: ignore[union-attr]
    assert store.gate_get(gate_id).remaining == 1  # type: ignore[union-attr]
    store.task_cancel(members[2].id)
    released = store.task_get(callback.id)
    assert released is not None and released.status is Status.PENDING
    assert released.upstream == {
        "shape": "outcomes",
        "outcomes": [
            {"id": members[0].id, "status": "done", "result": {"n": 1}, "error": None},
            {
                "id": members[1].id,
                "status": "failed",
                "result": None,
                "error": {**ERROR.stored(), "attempt": 1},  # stamped with its attempt
            },
            {"id": members[2].id, "status": "cancelled", "result": None, "error": None},
        ],
    }
    gate = store.gate_get(gate_id)
    assert gate is not None and gate.remaining == 0 and gate.opened_at is not None
    assert gate.broken_at is None


def test_a_retried_attempt_is_not_an_ending(store: Store) -> None:
    created = store.flow_create([member(0, max_attempts=2), member(1)], [NewGate("g", (0,), (1,))])
    _, lease = reserve_one(store, topics=["m0"])
    store.task_fail(lease, ERROR, retry_in=0)
    assert store.gate_get("g").remaining == 1  # type: ignore[union-attr]
    assert store.task_get(created[1].id).status is Status.WAITING  # type: ignore[union-attr]
    complete(store, 0, 5)
    assert store.task_get(created[1].id).status is Status.PENDING  # type: ignore[union-attr]


def test_a_member_sent_back_by_a_retry_counts_again(store: Store) -> None:
    members, callback, gate_id = group_with_callback(store, 2)
    fail(store, 0)
    store.task_retry(members[0].id)
    assert store.gate_get(gate_id).remaining == 2  # type: ignore[union-attr]
    complete(store, 1)
    assert store.task_get(callback.id).status is Status.WAITING  # type: ignore[union-attr]
    complete(store, 0, "again")
    released = store.task_get(callback.id)
    assert released is not None and released.status is Status.PENDING
    assert [o["status"] for o in released.upstream["outcomes"]] == ["done", "done"]


def chain(store: Store, length: int) -> list[Task]:
    """``length`` tasks (topics m0…), each behind the one before, all_done."""
    gates = [
        NewGate(f"link-{i}", (i,), (i + 1,), GateMode.ALL_DONE, GateShape.RESULT)
        for i in range(length - 1)
    ]
    return store.flow_create([member(i) for i in range(length)], gates)


def test_a_chain_passes_each_result_to_the_next_link(store: Store) -> None:
    tasks = chain(store, 3)
    assert [t.status for t in tasks] == [Status.PENDING, Status.WAITING, Status.WAITING]
    complete(store, 0, 3)
    second = store.task_get(tasks[1].id)
    assert second is not None and second.status is Status.PENDING
    assert second.upstream == {
        "shape": "result",
        "outcomes": [{"id": tasks[0].id, "status": "done", "result": 3, "error": None}],
    }
    assert store.task_get(tasks[2].id).status is Status.WAITING  # type: ignore[union-attr]


def test_a_failure_stops_a_chain_and_cancels_every_link_after_it(store: Store) -> None:
    tasks = chain(store, 4)
    complete(store, 0, 1)
    fail(store, 1)
    for later in tasks[2:]:
        stopped = store.task_get(later.id)
        assert stopped is not None and stopped.status is Status.CANCELLED
        assert stopped.error is not None and stopped.error.type == "UpstreamFailed"
        assert tasks[1].id in stopped.error.message and "failed" in stopped.error.message
        assert stopped.finished_at is not None
    assert store.gate_get("link-1").broken_at is not None  # type: ignore[union-attr]
    assert store.gate_get("link-2").broken_at is not None  # type: ignore[union-attr]


def test_a_cancel_before_a_fan_out_cancels_the_group_and_what_follows(store: Store) -> None:
    # head → [b1, b2] → tail
    tasks = store.flow_create(
        [member(i) for i in range(4)],
        [
            NewGate("fan-out", (0,), (1, 2), GateMode.ALL_DONE, GateShape.RESULT),
            NewGate("fan-in", (1, 2), (3,), GateMode.ALL_DONE, GateShape.RESULTS),
        ],
    )
    store.task_cancel(tasks[0].id)
    assert [store.task_get(t.id).status for t in tasks[1:]] == [Status.CANCELLED] * 3  # type: ignore[union-attr]


def test_a_group_in_a_chain_fans_in_its_results(store: Store) -> None:
    tasks = store.flow_create(
        [member(i) for i in range(4)],
        [
            NewGate("fan-out", (0,), (1, 2), GateMode.ALL_DONE, GateShape.RESULT),
            NewGate("fan-in", (1, 2), (3,), GateMode.ALL_DONE, GateShape.RESULTS),
        ],
    )
    complete(store, 0, "x")
    complete(store, 2, 20)
    complete(store, 1, 10)
    tail = store.task_get(tasks[3].id)
    assert tail is not None and tail.status is Status.PENDING
    assert tail.upstream["shape"] == "results"
    assert [o["result"] for o in tail.upstream["outcomes"]] == [10, 20]  # members' order


def test_a_waiting_task_can_be_cancelled_and_its_gate_still_counts_it(store: Store) -> None:
    _, callback, _ = group_with_callback(store, 1)
    cancelled = store.task_cancel(callback.id)
    assert cancelled.status is Status.CANCELLED
    complete(store, 0)
    assert store.task_get(callback.id).status is Status.CANCELLED  # type: ignore[union-attr]


def test_the_event_log_shows_the_ending_before_the_release_it_caused(store: Store) -> None:
    members, callback, _ = group_with_callback(store, 1)
    _, lease = reserve_one(store, topics=["m0"])
    before = last_event_cursor(store)
    store.task_complete(lease, None)
    steps = [(e.task_id, e.from_status, e.to_status) for e in events_since(store, before)]
    assert steps == [
        (members[0].id, Status.RUNNING, Status.DONE),
        (callback.id, Status.WAITING, Status.PENDING),
    ]


def test_a_flow_is_created_with_waiting_events_and_counted_as_waiting(store: Store) -> None:
    before = last_event_cursor(store)
    _, callback, _ = group_with_callback(store, 2)
    created = {e.task_id: e.to_status for e in events_since(store, before)}
    assert created[callback.id] is Status.WAITING
    assert store.task_stats().total(Status.WAITING) == 1


@pytest.mark.parametrize(
    ("gates", "field"),
    [
        ([NewGate("a", (0,), (1,)), NewGate("b", (1,), (0,))], "gates"),
        ([NewGate("a", (0,), (1,)), NewGate("b", (0,), (2,))], "gates[1].members"),
        ([NewGate("a", (0,), (2,)), NewGate("b", (1,), (2,))], "gates[1].waiting"),
        ([NewGate("a", (0,), (1,)), NewGate("a", (1,), (2,))], "gates[1].id"),
        ([NewGate("a", (), (1,))], "gates[0].members"),
        ([NewGate("a", (0,), ())], "gates[0].waiting"),
        ([NewGate("a", (0,), (5,))], "gates[0].waiting"),
        ([NewGate("a", (0, 1), (2,), shape=GateShape.RESULT)], "gates[0].shape"),
    ],
)
def test_a_flow_that_could_never_run_is_refused_whole(
    store: Store, gates: list[NewGate], field: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        store.flow_create([member(i) for i in range(3)], gates)
    assert refused.value.field == field
    assert store.task_count() == 0


def test_a_unique_task_cannot_be_part_of_a_flow(store: Store) -> None:
    from tenure.task import LockPhase, UniqueRule

    unique = UniqueRule("k", LockPhase.UNTIL_EXECUTED)
    with pytest.raises(InvalidInput) as refused:
        store.flow_create([member(0), member(1, unique=unique)], [NewGate("a", (0,), (1,))])
    assert refused.value.field == "tasks[1].unique"
    assert store.task_count() == 0


def test_retention_prunes_the_gates_that_opened_or_broke_before_it(store: Store) -> None:
    _, _, opened = group_with_callback(store, 1)
    complete(store, 0)
    closed = NewGate("closed", (0,), (1,))
    store.flow_create([new(topic="x"), new(topic="y")], [closed])
    store.task_prune(60, now=in_(3600))
    assert store.gate_get(opened) is None
    assert store.gate_get("closed") is not None  # its member has not ended


def test_retention_keeps_the_ended_members_of_a_gate_still_closed(store: Store) -> None:
    members, callback, _ = group_with_callback(store, 2)
    complete(store, 0, "early")
    store.task_prune(60, now=in_(3600))  # the first member is long past retention
    assert store.task_get(members[0].id) is not None
    complete(store, 1, "late")
    released = store.task_get(callback.id)
    assert released is not None and released.status is Status.PENDING
    assert [o["result"] for o in released.upstream["outcomes"]] == ["early", "late"]
    assert released.run_at is not None  # runnable from its release, for the queue's age
    store.task_prune(60, now=in_(3600))
    assert store.task_get(members[0].id) is None  # the gate opened: it may go now


def test_an_unknown_gate_is_none(store: Store) -> None:
    assert store.gate_get("nowhere") is None


def test_a_gate_id_that_exists_refuses_the_whole_flow(store: Store) -> None:
    store.flow_create([new(topic="x"), new(topic="y")], [NewGate("taken", (0,), (1,))])
    with pytest.raises(InvalidInput) as refused:
        store.flow_create([new(topic="x"), new(topic="y")], [NewGate("taken", (0,), (1,))])
    assert refused.value.field == "gates"
    assert store.task_count() == 2  # nothing of the second flow
