"""Reading: by group, listing with every filter, keyset cursors, leased tasks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tenure import InvalidInput, Status, Store
from tenure.store import TaskFilter
from tenure.store import cursor as cursors
from tests.conformance.support import new, reach, reserve_one


def test_group_lists_its_tasks_oldest_first(store: Store) -> None:
    tasks = store.task_create_many([new(group_id="g1", data=i) for i in range(3)])
    store.task_create(new(group_id="g2"))
    assert [t.id for t in store.task_list_group("g1")] == [t.id for t in tasks]
    assert store.task_list_group("none") == []


def _ids(store: Store, filters: TaskFilter) -> set[str]:
    return {t.id for t in store.task_list(filters, limit=1000).tasks}


def test_each_filter_selects_only_matching_tasks(store: Store) -> None:
    a = store.task_create(new(topic="a", name="x", sub_topic="eu", group_id="g"))
    b = store.task_create(new(topic="b", name="y"))
    running, _ = reach(store, Status.RUNNING)
    assert _ids(store, TaskFilter(topic="a")) == {a.id}
    assert _ids(store, TaskFilter(sub_topic="eu")) == {a.id}
    assert _ids(store, TaskFilter(name="y")) == {b.id}
    assert _ids(store, TaskFilter(group_id="g")) == {a.id}
    assert _ids(store, TaskFilter(status=Status.RUNNING)) == {running.id}
    assert _ids(store, TaskFilter(status=Status.PENDING)) == {a.id, b.id}
    assert _ids(store, TaskFilter(topic="a", name="y")) == set()
    assert _ids(store, TaskFilter()) == {a.id, b.id, running.id}


def test_created_range_filter(store: Store) -> None:
    base = datetime(2030, 1, 1, tzinfo=UTC)
    early = store.task_create(new(), now=base)
    late = store.task_create(new(), now=base + timedelta(hours=2))
    assert _ids(store, TaskFilter(created_from=base + timedelta(hours=1))) == {late.id}
    assert _ids(store, TaskFilter(created_to=base + timedelta(hours=1))) == {early.id}
    both = TaskFilter(created_from=base, created_to=base + timedelta(hours=3))
    assert _ids(store, both) == {early.id, late.id}


def test_pages_cover_everything_once_while_tasks_are_inserted(store: Store) -> None:
    original = {t.id for t in store.task_create_many([new() for _ in range(50)])}
    seen: list[str] = []
    cursor = None
    while True:
        page = store.task_list(cursor=cursor, limit=7)
        seen.extend(t.id for t in page.tasks)
        store.task_create_many([new() for _ in range(3)])  # inserted while paging
        if page.cursor is None:
            break
        cursor = page.cursor
    assert len(seen) == len(set(seen)), "a task was listed twice"
    assert original <= set(seen), "a task was skipped"


def test_last_page_has_no_cursor(store: Store) -> None:
    store.task_create_many([new() for _ in range(3)])
    page = store.task_list(limit=10)
    assert len(page.tasks) == 3 and page.cursor is None


def test_filters_hold_across_pages(store: Store) -> None:
    wanted = [t.id for t in store.task_create_many([new(topic="keep") for _ in range(10)])]
    store.task_create_many([new(topic="other") for _ in range(10)])
    got: list[str] = []
    cursor = None
    while True:
        page = store.task_list(TaskFilter(topic="keep"), cursor=cursor, limit=3)
        got.extend(t.id for t in page.tasks)
        if page.cursor is None:
            break
        cursor = page.cursor
    assert got == wanted


@pytest.mark.parametrize(
    "bad",
    ["", "garbage", "a.b.c", "!!!!.0123456789abcdef", cursors.encode(5, "other-scope")],
)
def test_malformed_or_foreign_cursor_is_refused(store: Store, bad: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.task_list(cursor=bad)
    assert raised.value.field == "cursor"


def test_tampered_cursor_is_refused(store: Store) -> None:
    store.task_create_many([new() for _ in range(4)])
    cursor = store.task_list(limit=2).cursor
    assert cursor is not None
    body, seal = cursor.split(".")
    tampered = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1] + "." + seal
    with pytest.raises(InvalidInput, match="cursor"):
        store.task_list(cursor=tampered, limit=2)


def test_cursor_of_another_filter_is_refused(store: Store) -> None:
    store.task_create_many([new(topic="a") for _ in range(4)])
    cursor = store.task_list(TaskFilter(topic="a"), limit=2).cursor
    assert cursor is not None
    with pytest.raises(InvalidInput, match="cursor"):
        store.task_list(TaskFilter(topic="b"), cursor=cursor)


def test_unknown_status_filter_is_refused(store: Store) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.task_list(TaskFilter(status="exploded"))  # type: ignore[arg-type]
    assert raised.value.field == "status"


def test_list_leased_returns_running_and_snoozed_only(store: Store) -> None:
    running, _ = reach(store, Status.RUNNING)
    snoozed, _ = reach(store, Status.SNOOZED)
    for status in (Status.PENDING, Status.DONE, Status.FAILED, Status.CANCELLED):
        reach(store, status)
    leased = store.task_list_leased().tasks
    assert {t.id for t in leased} == {running.id, snoozed.id}
    only = store.task_list_leased(topics=[running.topic]).tasks
    assert [t.id for t in only] == [running.id]


def test_list_leased_pages_with_cursor(store: Store) -> None:
    store.task_create_many([new(topic="l") for _ in range(5)])
    for _ in range(5):
        reserve_one(store, topics=["l"])
    first = store.task_list_leased(limit=3)
    assert first.cursor is not None
    second = store.task_list_leased(cursor=first.cursor, limit=3)
    ids = [t.id for t in first.tasks + second.tasks]
    assert len(ids) == 5 == len(set(ids)) and second.cursor is None
