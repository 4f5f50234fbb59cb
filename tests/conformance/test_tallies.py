"""The queue's figures on every store, as stats, metrics and the dashboard read
them: the entries into each status count what the event log records and never
go down; the endings of a window count that window only; the oldest pending
wait is the longest wait among the tasks runnable now."""

from __future__ import annotations

from datetime import datetime, timedelta

from tenure import LockPhase, OnConflict, Status, Store, Task
from tenure.store import NewTask, ReserveParams, UniqueRule
from tests.conformance.support import ERROR, events_since, lease_of, new, reserve_one

T0 = datetime.fromisoformat("2030-01-01T00:00:00+00:00")


def logged_entries(store: Store) -> dict[str, dict[Status, int]]:
    """Per topic, the events in the log that enter each status (a creation enters
    its first), counted from the log itself."""
    counted: dict[str, dict[Status, int]] = {}
    for event in events_since(store, None):
        if event.to_status is not None:  # not a report
            per_status = counted.setdefault(event.topic, {})
            per_status[event.to_status] = per_status.get(event.to_status, 0) + 1
    return counted


def twins(
    store: Store, topic: str, lock: LockPhase, on_conflict: OnConflict, n: int = 2, **fields: object
) -> list[Task]:
    rule = UniqueRule(key=topic, lock=lock, on_conflict=on_conflict, retry_in=30)
    return [store.task_create(new(topic=topic, unique=rule, **fields), now=T0) for _ in range(n)]


def reserve(
    store: Store, topic: str, limit: int = 1, owner: str = "w1", now: datetime = T0
) -> list[Task]:
    return store.task_reserve(ReserveParams(owner=owner, topics=[topic], limit=limit, now=now))


def test_totals_count_every_entry_the_log_records_with_starts_refused_by_a_lock(
    store: Store,
) -> None:
    # Refused at start while the twin runs: cancelled, rescheduled, failed.
    for topic, on_conflict in (
        ("reject", OnConflict.REJECT),
        ("again", OnConflict.RESCHEDULE),
        ("raise", OnConflict.RAISE),
    ):
        first, _ = twins(store, topic, LockPhase.WHILE_EXECUTING, on_conflict)
        [running] = reserve(store, topic)
        assert running.id == first.id
        assert reserve(store, topic, owner="w2") == []  # the twin's start is refused
        store.tally_fold()
        store.task_complete(lease_of(running, "w1"), None, now=T0)
    # Twins refused in the very statement that starts one of them.
    twins(store, "batch", LockPhase.WHILE_EXECUTING, OnConflict.REJECT, n=3)
    assert len(reserve(store, "batch", limit=10)) == 1
    # An until_executed task whose expired lock a newer twin took: refused at start.
    rule = UniqueRule(key="executed", lock=LockPhase.UNTIL_EXECUTED, ttl=10)
    store.task_create(new(topic="executed", unique=rule), now=T0)
    later = T0 + timedelta(seconds=20)
    store.task_create(new(topic="executed", unique=rule), now=later)
    assert len(reserve(store, "executed", limit=10, now=later)) == 1
    # And tasks without a rule, one failed and retried.
    store.task_create(new(topic="plain", max_attempts=2))
    _, lease = reserve_one(store, topics=["plain"])
    store.task_fail(lease, ERROR, retry_in=0)
    _, lease = reserve_one(store, topics=["plain"])
    store.task_complete(lease, None)

    expected = logged_entries(store)
    assert store.task_transition_totals() == expected
    store.tally_fold(compact=True)
    assert store.task_transition_totals() == expected
    # pending -> running -> pending again, for the twin refused by reschedule.
    assert expected["again"] == {Status.PENDING: 3, Status.RUNNING: 2, Status.DONE: 1}
    assert expected["batch"] == {Status.PENDING: 3, Status.RUNNING: 3, Status.CANCELLED: 2}


def test_totals_never_go_down_when_events_and_tasks_are_pruned(store: Store) -> None:
    for status in (Status.DONE, Status.DONE, Status.FAILED):
        task = store.task_create(new(topic="pruned"))
        _, lease = reserve_one(store, topics=["pruned"])
        if status is Status.DONE:
            store.task_complete(lease, None)
        else:
            store.task_fail(lease, ERROR)
    store.tally_fold()
    before = store.task_transition_totals()
    assert before["pruned"] == {
        Status.PENDING: 3,
        Status.RUNNING: 3,
        Status.DONE: 2,
        Status.FAILED: 1,
    }
    later = store.clock_now() + timedelta(days=8)
    assert store.event_prune(7 * 86400, now=later) == 9
    assert store.task_prune(7 * 86400, now=later) == 3
    assert store.task_get(task.id) is None and events_since(store, None) == []
    store.tally_fold(compact=True)
    assert store.task_transition_totals() == before
    store.task_create(new(topic="pruned"))
    assert store.task_transition_totals()["pruned"][Status.PENDING] == 4


def test_endings_count_the_window_only_not_the_start_of_its_minute(store: Store) -> None:
    # A window that begins half a minute into a minute of an hour ago; tasks
    # end (by the times they are given) on either side of its start.
    now = store.clock_now()
    minute = now.replace(second=0, microsecond=0) - timedelta(hours=1)
    start = minute + timedelta(seconds=30)
    ends = [
        (-10, Status.DONE),  # the minute before
        (10, Status.DONE),  # the same minute, before the window
        (20, Status.CANCELLED),  # likewise
        (40, Status.FAILED),  # in the window, in the minute it begins in
        (50, Status.DONE),  # likewise
        (90, Status.DONE),  # in the window, a whole minute after its start
    ]
    for offset, status in ends:
        at = minute + timedelta(seconds=offset)
        task = store.task_create(new(topic="ends"), now=at - timedelta(seconds=2))
        if status is Status.CANCELLED:
            store.task_cancel(task.id, now=at)
            continue
        _, lease = reserve_one(store, topics=["ends"], now=at - timedelta(seconds=1))
        if status is Status.DONE:
            store.task_complete(lease, None, now=at)
        else:
            store.task_fail(lease, ERROR, now=at)
    # The clock moves on by a moment between these two reads: the window's start
    # lands that much after the half minute, far from the ends either side.
    stats = store.task_stats(window=(now - start).total_seconds())
    assert start <= stats.since < start + timedelta(seconds=5)
    assert stats.endings == {"ends": {Status.DONE: 2, Status.FAILED: 1}}
    store.tally_fold(compact=True)
    stats = store.task_stats(window=(now - start).total_seconds())
    assert stats.endings == {"ends": {Status.DONE: 2, Status.FAILED: 1}}


def test_oldest_pending_is_the_longest_wait_among_the_tasks_runnable_now(store: Store) -> None:
    now = store.clock_now()
    base = now.replace(microsecond=0) - timedelta(hours=1)

    def create(created: datetime, run_at: datetime | None = None, topic: str = "p") -> Task:
        return store.task_create(NewTask(topic=topic, name="n", run_at=run_at), now=created)

    # In creation order: delayed past now (not waiting yet); delayed long ago
    # until a moment after the next one's creation; not delayed; created last,
    # but runnable since before any of them.
    create(base - timedelta(hours=1), run_at=now + timedelta(hours=1))
    create(base - timedelta(minutes=30), run_at=base + timedelta(seconds=30))
    create(base)
    longest = create(base + timedelta(seconds=10), run_at=base - timedelta(seconds=60))
    create(base - timedelta(hours=2), run_at=now + timedelta(hours=1), topic="later")
    assert store.task_stats().oldest_pending == {"p": base - timedelta(seconds=60)}
    # Once that one is gone, the next longest wait.
    store.task_cancel(longest.id)
    assert store.task_stats().oldest_pending == {"p": base}
