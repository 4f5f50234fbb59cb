"""Following the event log by its opaque cursor: every event once, in order,
across pages, and nothing invented or refused silently. (That a transaction
committing out of order is not skipped needs two PostgreSQL connections:
tests/integration/test_postgres_event_cursor.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from tenure import InvalidInput, Status, Store
from tests.conformance.support import new, reach, reserve_one


def follow(store: Store, after: str | None, page: int) -> list[Any]:
    """Read the log to its end ``page`` events at a time, as a follower does."""
    seen = []
    while batch := store.event_list(after=after, limit=page):
        assert len(batch) <= page
        seen.extend(batch)
        after = batch[-1].cursor
    return seen


def test_paging_returns_every_event_once_in_order(store: Store) -> None:
    for status in Status:
        reach(store, status)
    store.task_create_many([new(topic="bulk") for _ in range(7)])
    everything = store.event_list(limit=10_000)
    assert len(everything) > 20
    assert len({e.cursor for e in everything}) == len(everything)
    for page in (1, 2, 3, 1000):
        assert follow(store, None, page) == everything
    # the log of one task is in the order it happened
    snoozed = [e for e in everything if e.topic == "reach-snoozed"]
    assert [(e.from_status, e.to_status) for e in snoozed] == [
        (None, "pending"),
        ("pending", "running"),
        ("running", "snoozed"),
    ]


def test_the_last_cursor_waits_for_the_next_transition(store: Store) -> None:
    assert store.event_list() == []
    task = store.task_create(new())
    [created] = store.event_list()
    assert created.task_id == task.id
    assert store.event_list(after=created.cursor) == []
    assert store.event_list(after=created.cursor) == []  # asking again changes nothing
    running, _ = reserve_one(store)
    [started] = store.event_list(after=created.cursor)
    assert (started.task_id, started.to_status) == (running.id, "running")
    assert store.event_list() == [created, started]


MALFORMED = [
    "",
    "1",
    "a.b",
    "1.2.3",
    "-1.5",
    "1.-5",
    " 1.2",
    "1.2 ",
    "\u0661.\u0662",
    "1e3.1",
    "0x1.2",
]


@pytest.mark.parametrize("cursor", MALFORMED)
def test_a_malformed_cursor_is_refused(store: Store, cursor: str) -> None:
    store.task_create(new())
    with pytest.raises(InvalidInput) as raised:
        store.event_list(after=cursor)
    assert raised.value.field == "after"


@pytest.mark.parametrize("cursor", [5, 5.0, b"0.1", ("0", "1")])
def test_a_cursor_that_is_not_a_string_is_refused(store: Store, cursor: object) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.event_list(after=cursor)  # type: ignore[arg-type]
    assert raised.value.field == "after"


def test_out_of_range_cursors_are_refused(store: Store) -> None:
    for cursor in (f"{2**64}.1", f"0.{2**63}", "1" * 21 + ".1"):
        with pytest.raises(InvalidInput):
            store.event_list(after=cursor)
    assert store.event_list(after=f"{2**64 - 1}.{2**63 - 1}") == []
