"""What a worker holds, and the counts its fetch loop reserves by: waiting tasks
(reserved, not yet started) and unfinished ones (waiting or running)."""

from __future__ import annotations

from datetime import UTC, datetime

from tenure import Lease, Status, Task
from tenure.worker.held import Held, Holdings


def held(task_id: str, timeout: float | None = None, token: int = 2) -> Held:
    now = datetime.now(UTC)
    task = Task(
        id=task_id,
        topic="t",
        name="n",
        status=Status.RUNNING,
        data=None,
        created_at=now,
        updated_at=now,
        timeout=timeout,
    )
    return Held(task, Lease(task_id, "w", token))


def counts(holdings: Holdings) -> tuple[int, int, int]:
    assert holdings.unwritten() == len(holdings) - holdings.unfinished()
    return len(holdings), holdings.unfinished(), holdings.waiting()


def test_a_task_waits_then_runs_then_ends_then_is_forgotten() -> None:
    holdings = Holdings()
    a = held("a", timeout=5.0)
    holdings.add(a)
    assert counts(holdings) == (1, 1, 1)
    assert holdings.claim(a)
    assert a.running and a.deadline is not None
    assert counts(holdings) == (1, 1, 0)
    assert holdings.end(a)
    assert counts(holdings) == (1, 0, 0)  # its ending is still being written
    assert not holdings.end(a)  # ended once only
    holdings.drop(a)
    assert counts(holdings) == (0, 0, 0)


def test_a_task_ended_while_waiting_is_never_claimed() -> None:
    holdings = Holdings()
    a, b = held("a"), held("b")
    holdings.add(a)
    holdings.add(b)
    holdings.claim(b)
    assert holdings.end_waiting() == [a]
    assert counts(holdings) == (2, 1, 0)
    assert not holdings.claim(a)
    assert counts(holdings) == (2, 1, 0)


def test_dropping_an_unfinished_task_keeps_the_counts_right() -> None:
    holdings = Holdings()
    a, b = held("a"), held("b")
    holdings.add(a)
    holdings.add(b)
    holdings.claim(b)
    holdings.drop(a)
    holdings.drop(b)
    assert counts(holdings) == (0, 0, 0)
    holdings.drop(b)  # forgotten already: nothing changes
    assert counts(holdings) == (0, 0, 0)


def test_a_new_reservation_of_a_held_task_replaces_the_old_one() -> None:
    # Revoked (or cancelled and retried) and reserved again by this same worker
    # before a keepalive told it: the old execution must neither end nor start
    # the new reservation, and the counts must not leak a slot.
    holdings = Holdings()
    old, new = held("a", token=2), held("a", token=5)
    holdings.add(old)
    holdings.claim(old)
    holdings.add(new)
    assert counts(holdings) == (1, 1, 1)
    assert not holdings.end(old)  # the old execution's ending is ignored
    assert not holdings.claim(old)
    assert holdings.claim(new) and holdings.end(new)
    holdings.drop(new)
    assert counts(holdings) == (0, 0, 0)
