"""The event log beyond plain paging: the newest events first (a tail, and
following on from it), what kind of event each entry is, retention that
deletes events and refuses a follower whose history it deleted, and the
wake-up a follower gets when another store appends events."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta

import pytest

from tenure import Event, InvalidInput, Status, Store
from tenure.errors import EventsPruned
from tenure.store.types import EVENT_KINDS
from tests.conformance.support import OWNER, events_since, in_, new, reach, reserve_one
from tests.conformance.test_events import MALFORMED
from tests.conftest import StoreFactory

HOUR = 3600.0


def create_tasks(store: Store, count: int, *, now: datetime | None = None) -> list[str]:
    """``count`` tasks, created a second apart from ``now`` (``None``: the store's now)."""
    return [
        store.task_create(
            new(topic="log"), now=None if now is None else now + timedelta(seconds=i)
        ).id
        for i in range(count)
    ]


def tail_to_start(store: Store, page: int) -> list[Event]:
    """The whole log, newest first, read back ``page`` events at a time."""
    seen: list[Event] = []
    before = None
    while batch := store.event_tail(before=before, limit=page):
        assert len(batch) <= page
        seen.extend(batch)
        before = batch[-1].cursor
    return seen


# -- event_tail ------------------------------------------------------------------------


def test_tail_of_an_empty_log_is_empty(store: Store) -> None:
    assert store.event_tail() == []


def test_tail_returns_the_newest_events_newest_first(store: Store) -> None:
    create_tasks(store, 7)
    everything = events_since(store, None)
    assert len(everything) == 7
    assert store.event_tail(limit=3) == everything[:-4:-1]
    assert store.event_tail(limit=100) == everything[::-1]


def test_before_pages_backwards_to_the_start(store: Store) -> None:
    create_tasks(store, 7)
    everything = events_since(store, None)
    newest = store.event_tail(limit=3)
    older = store.event_tail(before=newest[-1].cursor, limit=3)
    assert older == everything[-4:-7:-1]
    assert store.event_tail(before=everything[0].cursor) == []
    for page in (1, 2, 3, 7, 100):
        assert tail_to_start(store, page) == everything[::-1]


def followed_to(store: Store, cursor: str | None, count: int) -> list[Event]:
    """The events after ``cursor`` once there are ``count`` (or more) of them,
    within seconds: a committed event waits behind a transaction that may still
    write one (on PostgreSQL, one whose backend the snapshot shows running but
    the server's activity view does not yet), and a follower reads again."""
    deadline = time.monotonic() + 5
    while len(followed := store.event_list(after=cursor)) < count:
        assert time.monotonic() < deadline, followed
        time.sleep(0.01)
    return followed


def test_following_from_the_tail_returns_exactly_what_came_after(store: Store) -> None:
    create_tasks(store, 3)
    followed_to(store, None, 3)  # the tail is read once every creation is in view
    [newest] = store.event_tail(limit=1)
    assert store.event_list(after=newest.cursor) == []
    later = create_tasks(store, 2)
    running, lease = reserve_one(store, topics=["log"])
    store.task_complete(lease)
    followed = followed_to(store, newest.cursor, 4)
    assert [(e.task_id, e.kind) for e in followed] == [
        (later[0], "created"),
        (later[1], "created"),
        (running.id, "running"),
        (running.id, "done"),
    ]
    assert followed == events_since(store, None)[3:]


@pytest.mark.parametrize("cursor", MALFORMED)
def test_a_malformed_before_is_refused_as_after(store: Store, cursor: str) -> None:
    create_tasks(store, 1)
    with pytest.raises(InvalidInput) as raised:
        store.event_tail(before=cursor)
    assert raised.value.field == "after"


@pytest.mark.parametrize("limit", [0, -1, 10_001])
def test_a_tail_limit_out_of_bounds_is_refused(store: Store, limit: int) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.event_tail(limit=limit)
    assert raised.value.field == "limit"


# -- Event.kind ----------------------------------------------------------------------


def test_kind_of_each_task_transition(store: Store) -> None:
    reach(store, Status.DONE)
    failed, _ = reach(store, Status.FAILED)
    store.task_retry(failed.id)
    reach(store, Status.CANCELLED)
    reach(store, Status.SNOOZED)
    kinds = [(e.topic, e.kind) for e in events_since(store, None)]
    assert kinds == [
        ("reach-done", "created"),
        ("reach-done", "running"),
        ("reach-done", "done"),
        ("reach-failed", "created"),
        ("reach-failed", "running"),
        ("reach-failed", "failed"),
        ("reach-failed", "pending"),
        ("reach-cancelled", "created"),
        ("reach-cancelled", "cancelled"),
        ("reach-snoozed", "created"),
        ("reach-snoozed", "running"),
        ("reach-snoozed", "snoozed"),
    ]
    assert {kind for _, kind in kinds} <= EVENT_KINDS


def test_a_created_event_names_the_task(store: Store) -> None:
    task = store.task_create(new(topic="kinds", name="first"))
    [created] = events_since(store, None)
    assert created.kind == "created"
    assert (created.from_status, created.to_status) == (None, Status.PENDING)
    assert (created.task_id, created.topic, created.name) == (task.id, "kinds", "first")


def test_a_report_event_carries_the_key_and_total(store: Store) -> None:
    report = store.report_save(
        "nightly", in_(-60), owner="scheduler-1", query={}, task_ids=["a", "b"], total=5
    )
    assert report is not None
    [event] = events_since(store, None)
    assert event.kind == "report" and "report" in EVENT_KINDS
    assert (event.from_status, event.to_status) == (None, None)
    assert (event.task_id, event.topic, event.name) == ("", "", "nightly")
    assert (event.attempt, event.owner, event.at) == (5, "scheduler-1", report.run_at)


# -- retention ---------------------------------------------------------------------------


def old_and_new_events(store: Store) -> tuple[list[Event], list[Event]]:
    """Three events from two hours ago, then two from now."""
    create_tasks(store, 3, now=store.clock_now() - timedelta(hours=2))
    create_tasks(store, 2)
    everything = events_since(store, None)
    assert len(everything) == 5
    return everything[:3], everything[3:]


def test_prune_deletes_only_events_older_than_the_cutoff(store: Store) -> None:
    _, recent = old_and_new_events(store)
    assert store.event_prune(4 * HOUR, now=in_(HOUR)) == 0  # cutoff 3 h ago
    assert store.event_prune(1.5 * HOUR, now=in_(HOUR)) == 3  # cutoff 30 min ago
    assert events_since(store, None) == recent
    assert store.event_tail() == recent[::-1]
    assert store.event_prune(0, now=in_(HOUR)) == 2
    assert events_since(store, None) == []


def test_prune_deletes_at_most_limit_events_oldest_first(store: Store) -> None:
    old, recent = old_and_new_events(store)
    assert store.event_prune(HOUR, limit=2) == 2
    assert events_since(store, None) == [old[2], *recent]


def test_a_cursor_older_than_the_newest_pruned_is_refused(store: Store) -> None:
    old, _ = old_and_new_events(store)
    assert store.event_prune(HOUR, now=in_(60)) == 3
    for cursor in (old[0].cursor, old[1].cursor):
        with pytest.raises(EventsPruned, match="pruned") as raised:
            store.event_list(after=cursor)
        assert raised.value.cursor == cursor
        assert raised.value.pruned_to == old[2].cursor
        with pytest.raises(EventsPruned):
            store.event_page(after=cursor)


def test_cursors_at_or_after_the_newest_pruned_still_follow(store: Store) -> None:
    old, recent = old_and_new_events(store)
    assert store.event_prune(HOUR, now=in_(60)) == 3
    assert store.event_list(after=None) == recent
    assert store.event_list(after=old[2].cursor) == recent
    assert store.event_list(after=recent[0].cursor) == recent[1:]
    assert store.event_list(after=recent[1].cursor) == []


def test_nothing_is_refused_when_nothing_was_pruned(store: Store) -> None:
    old, recent = old_and_new_events(store)
    assert store.event_prune(3 * HOUR) == 0
    assert store.event_list(after=old[0].cursor) == [*old[1:], *recent]


def test_pruning_everything_refuses_every_older_cursor(store: Store) -> None:
    create_tasks(store, 3)
    first, *_, last = events_since(store, None)
    assert store.event_prune(60, now=in_(HOUR)) == 3
    assert store.event_list() == []
    assert store.event_list(after=last.cursor) == []
    with pytest.raises(EventsPruned, match="pruned"):
        store.event_list(after=first.cursor)
    created = store.task_create(new(topic="log"))
    assert [e.task_id for e in store.event_list(after=last.cursor)] == [created.id]


@pytest.mark.parametrize("older_than", [-1, float("nan"), float("inf")])
def test_prune_refuses_bad_ages(store: Store, older_than: float) -> None:
    create_tasks(store, 1)
    with pytest.raises(InvalidInput) as raised:
        store.event_prune(older_than)
    assert raised.value.field == "older_than"
    assert len(events_since(store, None)) == 1


def test_prune_refuses_a_naive_now(store: Store) -> None:
    create_tasks(store, 1)
    with pytest.raises(InvalidInput) as raised:
        store.event_prune(0, now=datetime(2030, 1, 1))  # naive on purpose
    assert raised.value.field == "now"
    assert len(events_since(store, None)) == 1


# -- event_notify ------------------------------------------------------------------------


NOTIFY_WITHIN = 5.0


def test_a_commit_by_another_store_wakes_the_follower(make_store: StoreFactory) -> None:
    follower, writer = make_store(), make_store()
    wake = threading.Event()
    unsubscribe = follower.event_notify(wake)
    try:
        wake.clear()  # a subscription may announce itself once
        writer.task_create(new(topic="notify"))
        assert wake.wait(NOTIFY_WITHIN), "no wake-up for another store's commit"
        wake.clear()
        task, lease = reserve_one(writer, owner=OWNER, topics=["notify"])
        assert wake.wait(NOTIFY_WITHIN), "no wake-up for a second commit"
        assert [e.kind for e in follower.event_list()] == ["created", "running"]
        assert task.status is Status.RUNNING and lease.task_id == task.id
    finally:
        unsubscribe()
    unsubscribe()  # twice is harmless


def test_a_report_by_another_store_wakes_the_follower(make_store: StoreFactory) -> None:
    follower, writer = make_store(), make_store()
    wake = threading.Event()
    unsubscribe = follower.event_notify(wake)
    wake.clear()
    writer.report_save("k", in_(0), owner="s", query={}, task_ids=[], total=0)
    assert wake.wait(NOTIFY_WITHIN), "no wake-up for a saved report"
    unsubscribe()


def test_after_unsubscribing_the_follower_is_not_woken(
    make_store: StoreFactory, backend: str
) -> None:
    follower, writer = make_store(), make_store()
    gone, witness = threading.Event(), threading.Event()
    follower.event_notify(gone)()
    keep = follower.event_notify(witness)
    gone.clear()
    witness.clear()
    writer.task_create(new(topic="notify"))
    assert witness.wait(NOTIFY_WITHIN), "a live subscriber was not woken"
    keep()
    # PostgreSQL wakes every subscriber at once, under one lock: the witness
    # woken means the unsubscribed one would have been. SQLite watches from a
    # thread per subscription, so there the late wake is waited for.
    woken = gone.wait(NOTIFY_WITHIN) if backend == "sqlite" else gone.is_set()
    assert not woken, "woken after unsubscribing"
