"""What operators read on every store: a task by a unique prefix of its id, a
task's history, newest-first pages that stay correct while tasks arrive, purge by
status, and the queue at a glance."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tenure import InvalidInput, Status, Store
from tenure.store import NewTask, TaskFilter
from tests.conformance.support import new, reach


def test_a_prefix_finds_one_task_or_says_it_is_ambiguous(store: Store) -> None:
    ids = ("job-100", "job-101", "job-2", "other_1", "other%1", "star*1", "what?1", "set[a]1")
    for task_id in (*ids, "Job-3", "otherX1"):
        store.task_create(new(id=task_id))
    assert store.task_find("job-2") == ["job-2"]
    assert store.task_find("job-10") == ["job-100", "job-101"]  # two: ambiguous
    assert store.task_find("nothing") == []
    assert store.task_find("job-3") == []  # case for case, on every store
    # The patterns' own characters (LIKE's, GLOB's) are taken literally.
    for task_id in ids[3:]:
        assert store.task_find(task_id[:-1]) == [task_id]
    with pytest.raises(InvalidInput):
        store.task_find("")


def test_the_last_id_of_a_prefix_is_the_greatest_in_byte_order(store: Store) -> None:
    for task_id in ("tick:a:2026-01-02", "tick:a:2026-01-10", "tick:a:2026-01-09", "tick:ab:9"):
        store.task_create(new(id=task_id))
    assert store.task_last_id("tick:a:") == "tick:a:2026-01-10"
    assert store.task_last_id("tick:a") == "tick:ab:9"
    assert store.task_last_id("tick:b") is None


def test_a_tasks_history_is_its_events_in_order(store: Store) -> None:
    done, _ = reach(store, Status.DONE)
    reach(store, Status.FAILED)
    history = store.task_events(done.id)
    assert [(e.kind, e.attempt) for e in history] == [("created", 0), ("running", 1), ("done", 1)]
    assert store.task_events("no-such-task") == []


def test_newest_first_pages_stay_correct_while_tasks_arrive(store: Store) -> None:
    for n in range(5):
        store.task_create(new(id=f"old-{n}"))
    first = store.task_list(limit=2, newest_first=True)
    assert [t.id for t in first.tasks] == ["old-4", "old-3"]
    store.task_create(new(id="arrived"))  # newer than the page: not in the pages after it
    assert first.cursor is not None
    rest = store.task_list(cursor=first.cursor, limit=10, newest_first=True)
    assert [t.id for t in rest.tasks] == ["old-2", "old-1", "old-0"] and rest.cursor is None
    # A cursor belongs to its order: the oldest-first listing refuses it.
    with pytest.raises(InvalidInput):
        store.task_list(cursor=first.cursor, limit=2)


def test_newest_first_applies_the_filters(store: Store) -> None:
    store.task_create(NewTask(topic="a", name="n", id="a-1"))
    store.task_create(NewTask(topic="b", name="n", id="b-1"))
    store.task_create(NewTask(topic="a", name="n", id="a-2"))
    page = store.task_list(TaskFilter(topic="a"), newest_first=True)
    assert [t.id for t in page.tasks] == ["a-2", "a-1"]


def test_purge_deletes_only_the_statuses_asked_for(store: Store) -> None:
    done, _ = reach(store, Status.DONE)
    failed, _ = reach(store, Status.FAILED)
    later = store.clock_now() + timedelta(days=8)
    assert store.task_prune(7 * 86400, now=later, statuses=["done"]) == 1
    assert store.task_get(done.id) is None
    assert store.task_get(failed.id) is not None
    with pytest.raises(InvalidInput):
        store.task_prune(0, statuses=["pending"])  # only finished tasks are pruned
    with pytest.raises(InvalidInput):
        store.task_prune(0, statuses=[])


def test_stats_count_per_topic_and_status_and_the_recent_endings(store: Store) -> None:
    reach(store, Status.DONE)
    reach(store, Status.FAILED)
    for _ in range(3):
        store.task_create(NewTask(topic="waiting", name="n"))
    store.task_create(
        NewTask(topic="waiting", name="n", run_at=store.clock_now() + timedelta(hours=1))
    )
    stats = store.task_stats(window=60)
    assert stats.counts["waiting"] == {Status.PENDING: 4}
    assert stats.counts["reach-done"] == {Status.DONE: 1}
    assert stats.total(Status.PENDING) == 4 and stats.total(Status.FAILED) == 1
    assert set(stats.oldest_pending) == {"waiting"}  # the delayed one is not waiting yet
    assert stats.oldest_pending["waiting"] <= stats.at
    assert stats.endings == {
        "reach-done": {Status.DONE: 1},
        "reach-failed": {Status.FAILED: 1},
    }
    assert stats.since == stats.at - timedelta(seconds=60)
    with pytest.raises(InvalidInput):
        store.task_stats(window=0)


def test_counts_follow_deletes_and_totals_count_every_entry(store: Store) -> None:
    for _ in range(2):
        reach(store, Status.DONE)
    store.tally_fold()
    totals = store.task_transition_totals()
    assert totals["reach-done"] == {Status.PENDING: 2, Status.RUNNING: 2, Status.DONE: 2}
    later = store.clock_now() + timedelta(days=8)
    assert store.task_prune(7 * 86400, now=later) == 2
    assert store.task_stats().counts == {}  # a deleted task is counted no more
    store.tally_fold(compact=True)
    assert store.task_stats().counts == {}
