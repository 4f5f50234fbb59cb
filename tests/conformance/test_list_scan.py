"""Listing with a bounded scan, and by a text in the description: a filter few
tasks match is answered page by page, each page examining at most ``scan``
tasks, and paging on still finds every match exactly once, in order."""

from __future__ import annotations

from typing import Any

import pytest

from tenure import InvalidInput, Status, Store, Task
from tenure.store import TaskFilter
from tests.conformance.support import new, reserve_one


def page_through(store: Store, filters: TaskFilter, **options: Any) -> tuple[list[str], int]:
    """Every task id the pages list, in order, and how many pages it took."""
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = store.task_list(filters, cursor=cursor, **options)
        pages += 1
        seen.extend(task.id for task in page.tasks)
        if page.cursor is None:
            return seen, pages
        cursor = page.cursor


def ids(tasks: list[Task], *, newest_first: bool = False) -> list[str]:
    found = [task.id for task in tasks]
    return found[::-1] if newest_first else found


@pytest.mark.parametrize("newest_first", [False, True], ids=["oldest-first", "newest-first"])
def test_a_rare_topic_behind_many_others_is_found_by_paging_with_a_small_scan(
    store: Store, newest_first: bool
) -> None:
    made = store.task_create_many(
        [new(topic="rare" if n in (3, 31, 32, 58) else "common") for n in range(60)]
    )
    wanted = ids([t for t in made if t.topic == "rare"], newest_first=newest_first)
    rare = TaskFilter(topic="rare")
    seen, pages = page_through(store, rare, scan=7, limit=2, newest_first=newest_first)
    assert seen == wanted  # each once, in the listing's order
    assert pages >= 60 // 7  # no page examined more than 7 tasks
    assert page_through(store, rare, newest_first=newest_first) == (wanted, 1)


def test_a_page_that_examined_no_match_is_empty_and_has_a_cursor(store: Store) -> None:
    rare = store.task_create(new(topic="rare"))
    store.task_create_many([new(topic="common") for _ in range(10)])
    rare_only = TaskFilter(topic="rare")
    first = store.task_list(rare_only, scan=4, newest_first=True)
    assert first.tasks == [] and first.cursor is not None  # more may exist
    second = store.task_list(rare_only, cursor=first.cursor, scan=4, newest_first=True)
    assert second.tasks == [] and second.cursor is not None
    last = store.task_list(rare_only, cursor=second.cursor, scan=4, newest_first=True)
    assert [t.id for t in last.tasks] == [rare.id] and last.cursor is None


def test_the_cursor_is_none_only_when_nothing_is_left(store: Store) -> None:
    store.task_create_many([new(topic="common") for _ in range(10)])
    none = TaskFilter(topic="none")
    assert store.task_list(none, scan=11).cursor is None  # the scan reached the end
    used_up = store.task_list(none, scan=10)  # as many as there are: more may exist
    assert used_up.tasks == [] and used_up.cursor is not None
    after = store.task_list(none, cursor=used_up.cursor, scan=10)
    assert after.tasks == [] and after.cursor is None
    full = store.task_list(TaskFilter(topic="common"), scan=3, limit=3)
    assert len(full.tasks) == 3 and full.cursor is not None


def test_the_scan_counts_only_the_tasks_of_the_status_asked_for(store: Store) -> None:
    pending: list[str] = []
    matches: set[str] = set()
    for n in range(8):
        task = store.task_create(new(topic="p", description="match" if n % 2 else "other"))
        pending.append(task.id)
        if n % 2:
            matches.add(task.id)
        for _ in range(3):  # tasks of another status between them: never examined
            store.task_create(new(topic="d", description="match, but done"))
            _, lease = reserve_one(store, topics=["d"])
            store.task_complete(lease)
    newest_first = pending[::-1]
    matching = TaskFilter(status=Status.PENDING, text="match")
    first = store.task_list(matching, scan=3, newest_first=True)
    assert [t.id for t in first.tasks] == [i for i in newest_first[:3] if i in matches]
    assert first.cursor is not None
    rest = store.task_list(matching, cursor=first.cursor, newest_first=True)  # any scan
    listed = [t.id for t in first.tasks + rest.tasks]
    assert listed == [i for i in newest_first if i in matches] and rest.cursor is None


@pytest.mark.parametrize("newest_first", [False, True], ids=["oldest-first", "newest-first"])
def test_tasks_arriving_between_pages_are_neither_skipped_nor_repeated(
    store: Store, newest_first: bool
) -> None:
    made = store.task_create_many(
        [new(topic="rare" if n % 5 == 0 else "common") for n in range(40)]
    )
    before = ids([t for t in made if t.topic == "rare"], newest_first=newest_first)
    arrived: list[str] = []
    seen: list[str] = []
    cursor = None
    while True:
        page = store.task_list(
            TaskFilter(topic="rare"), cursor=cursor, scan=6, limit=2, newest_first=newest_first
        )
        seen.extend(t.id for t in page.tasks)
        arrived.append(store.task_create_many([new(topic="rare"), new()])[0].id)
        if page.cursor is None:
            break
        cursor = page.cursor
    assert len(seen) == len(set(seen)), "a task was listed twice"
    if newest_first:  # new tasks come before the first page: paging on never meets them
        assert seen == before
    else:  # they come after: paging on meets each of them, in order
        assert seen == before + arrived[: len(seen) - len(before)]
        assert len(seen) > len(before)


def test_a_scanned_pages_cursor_serves_its_filters_and_order_only(store: Store) -> None:
    store.task_create_many([new(topic="a") for _ in range(6)])
    cursor = store.task_list(TaskFilter(topic="b"), scan=2).cursor
    assert cursor is not None
    assert store.task_list(TaskFilter(topic="b"), cursor=cursor).tasks == []  # without a scan too
    for other in ({"filters": TaskFilter(topic="a")}, {"newest_first": True}):
        with pytest.raises(InvalidInput) as raised:
            store.task_list(**{"filters": TaskFilter(topic="b"), **other}, cursor=cursor)
        assert raised.value.field == "cursor"


@pytest.mark.parametrize("bad", [0, -1, 10_000_001, True, 1.5, "10"])
def test_an_invalid_scan_is_refused(store: Store, bad: object) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.task_list(scan=bad)  # type: ignore[arg-type]
    assert raised.value.field == "scan"


DESCRIPTIONS = {
    "sync": "Daily SYNC of products",
    "percent": "100% done",
    "underscore": "snake_case",
    "backslash": r"C:\temp",
    "accent": "Élan",
    "none": None,
}


def test_text_is_a_literal_substring_of_the_description_in_any_ascii_case(
    store: Store,
) -> None:
    for key, description in DESCRIPTIONS.items():
        store.task_create(new(id=key, description=description))
    expected = {
        "sync": {"sync"},
        "DAILY sync": {"sync"},
        "%": {"percent"},
        "0% d": {"percent"},
        "e_c": {"underscore"},
        "_": {"underscore"},
        "\\": {"backslash"},
        ":\\T": {"backslash"},
        "élan": set(),  # only ASCII letters are folded, in both stores
        "Élan": {"accent"},
        "o": {"sync", "percent"},
    }
    for text, wanted in expected.items():
        filters = TaskFilter(text=text)
        assert {t.id for t in store.task_list(filters).tasks} == wanted, text
        assert store.task_count(filters) == len(wanted), text
    both = TaskFilter(text="o", status=Status.PENDING, name="job")
    scanned = store.task_list(both, newest_first=True, scan=5)  # "sync" is the sixth
    assert [t.id for t in scanned.tasks] == ["percent"] and scanned.cursor is not None


def test_a_cursor_belongs_to_its_text(store: Store) -> None:
    store.task_create_many([new(description="alpha") for _ in range(3)])
    cursor = store.task_list(TaskFilter(text="alpha"), limit=1).cursor
    assert cursor is not None
    with pytest.raises(InvalidInput) as raised:
        store.task_list(TaskFilter(text="beta"), cursor=cursor)
    assert raised.value.field == "cursor"


@pytest.mark.parametrize("bad", ["", "x" * 2001, "a\x00b", 5])
def test_an_invalid_text_is_refused(store: Store, bad: object) -> None:
    for read in (store.task_list, store.task_count):
        with pytest.raises(InvalidInput) as raised:
            read(TaskFilter(text=bad))  # type: ignore[arg-type,operator]
        assert raised.value.field == "text"
