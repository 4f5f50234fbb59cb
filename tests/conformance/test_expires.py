"""Deadlines on each store: a task with ``expires`` is reserved until that many
seconds after its creation, never after (by any reserve statement); the sweep
ends it cancelled with an ``Expired`` error and the usual event; a retry that
comes due after the deadline is swept too, and tasks without one are left
alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tenure import InvalidInput, Status, Store
from tenure.store import ReserveParams
from tests.conformance.support import (
    ERROR,
    OWNER,
    events_since,
    last_event_cursor,
    lease_of,
    new,
)

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def reserve(
    store: Store, when: datetime, topics: list[str] | None = None, limit: int = 10
) -> list[str]:
    params = ReserveParams(owner=OWNER, limit=limit, topics=topics, now=when)
    return [task.id for task in store.task_reserve(params)]


@pytest.mark.parametrize("topics", [None, ["t"], ["t", "u"]], ids=["any", "one", "several"])
def test_a_task_is_reserved_before_its_deadline_and_never_after(
    store: Store, topics: list[str] | None
) -> None:
    early = store.task_create(new(expires=60), now=T0)
    late = store.task_create(new(expires=60), now=T0)
    assert early.expires_at == at(60)
    assert store.task_get(early.id).expires_at == at(60)  # type: ignore[union-attr]
    assert reserve(store, at(59), topics, limit=1) == [early.id]
    assert reserve(store, at(61), topics) == []
    assert store.task_get(late.id).status is Status.PENDING  # type: ignore[union-attr]


def test_the_sweep_cancels_what_expired_and_says_why(store: Store) -> None:
    lasting = store.task_create(new(), now=T0)
    later = store.task_create(new(expires=3600), now=T0)
    expired = [store.task_create(new(expires=60), now=T0) for _ in range(3)]
    before = last_event_cursor(store)
    # The oldest first (here, in the order they were created at the same time).
    assert set(store.task_expire(limit=2, now=at(61))) == {t.id for t in expired[:2]}
    assert store.task_expire(now=at(61)) == [expired[2].id]
    assert store.task_expire(now=at(61)) == []
    for task in expired:
        swept = store.task_get(task.id)
        assert swept is not None and swept.status is Status.CANCELLED
        assert swept.error is not None and swept.error.type == "Expired"
        assert swept.attempts == 0 and swept.finished_at is not None
    ended = [(e.task_id, e.from_status, e.to_status) for e in events_since(store, before)]
    assert ended == [(t.id, Status.PENDING, Status.CANCELLED) for t in expired]
    assert reserve(store, at(62)) == [lasting.id, later.id]


def test_a_retry_due_after_the_deadline_is_swept_not_run(store: Store) -> None:
    task = store.task_create(new(expires=60, max_attempts=3), now=T0)
    [running] = store.task_reserve(ReserveParams(owner=OWNER, now=at(10)))
    retried = store.task_fail(lease_of(running), ERROR, retry_in=120, now=at(11))
    assert retried.status is Status.PENDING
    assert reserve(store, at(200)) == []
    assert store.task_expire(now=at(200)) == [task.id]
    swept = store.task_get(task.id)
    assert swept is not None and swept.status is Status.CANCELLED and swept.attempts == 1


def test_a_deadline_is_a_positive_number_of_seconds(store: Store) -> None:
    for wrong in (0, -1, "soon", float("nan")):
        with pytest.raises(InvalidInput, match="expires"):
            store.task_create(new(expires=wrong))
    with pytest.raises(InvalidInput, match="limit"):
        store.task_expire(limit=0)
