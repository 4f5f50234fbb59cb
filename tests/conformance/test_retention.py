"""Retention keeps up with any backlog: batches until nothing older is left,
again at the next cycle while some is, a count of what is left, and a warning
when it lasts."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from tenure import InvalidInput, Store
from tenure.maintenance import retention
from tenure.maintenance.retention import Retention
from tenure.maintenance.scheduler import Scheduler
from tenure.store.operating import BACKLOG_CAP
from tenure.store.types import Backlog
from tests.conformance.support import FakeClock, new

HOUR = 3600.0


def finished_long_ago(store: Store, count: int) -> None:
    """``count`` tasks created and cancelled two hours ago: two events each."""
    old = datetime.now(UTC) - timedelta(hours=2)
    for task in store.task_create_many([new() for _ in range(count)], now=old):
        store.task_cancel(task.id, now=old)


def test_the_backlog_counts_what_retention_has_yet_to_delete_up_to_a_cap(store: Store) -> None:
    finished_long_ago(store, 3)
    store.task_create_many([new() for _ in range(2)])  # pending, and recent events
    backlog = store.retention_backlog(HOUR)
    assert (backlog.tasks, backlog.events, backlog.rows) == (3, 6, 9)
    assert store.retention_backlog(HOUR, cap=4) == type(backlog)(3, 4, 4)
    assert store.retention_backlog(3 * HOUR).rows == 0
    with pytest.raises(InvalidInput):
        store.retention_backlog(HOUR, cap=0)


def test_one_prune_deletes_batch_after_batch_until_nothing_older_is_left(store: Store) -> None:
    finished_long_ago(store, 12)
    pruned = Retention(store, HOUR, batch=5, clock=FakeClock()).prune()
    assert (pruned.tasks, pruned.events, pruned.backlog.rows) == (12, 24, 0)
    assert store.retention_backlog(HOUR).rows == 0


def test_each_batch_that_deleted_rows_is_followed_by_the_stores_rest(store: Store) -> None:
    finished_long_ago(store, 4)
    rests: list[float] = []
    pruner = Retention(store, HOUR, batch=2, sleep=rests.append)
    assert pruner.batch == 2 and Retention(store, HOUR).batch == store.prune_batch
    pruned = pruner.prune()
    assert (pruned.tasks, pruned.events) == (4, 8)
    # Two batches of tasks and four of events deleted rows; the last of each
    # found none. A store whose writers share one lock rests after each one
    # that deleted (the batch's own time, times its factor); others never.
    assert len(rests) == (6 if store.prune_rest else 0)
    assert all(rest > 0 for rest in rests)


def test_a_backlog_left_by_the_budget_is_pruned_again_at_the_next_cycle(store: Store) -> None:
    finished_long_ago(store, 12)
    clock = FakeClock()
    scheduler = Scheduler(store, "s", retention=HOUR, prune_budget=0, clock=clock)
    scheduler.pruner.batch = 5  # one batch of each a cycle: the budget is spent at once
    seen = []
    for _ in range(7):
        report = scheduler.run_once()
        left = None if report.backlog is None else (report.backlog.tasks, report.backlog.events)
        seen.append((report.pruned_tasks, report.pruned_events, left))
        clock.advance(scheduler.interval)
    # 12 tasks and 24 events, five of each a cycle, one cycle after another
    # (a prune a minute would have taken five minutes); a prune that found
    # nothing, and the cycle after it prunes nothing: the store is left alone.
    assert seen == [
        (5, 5, (7, 19)), (5, 5, (2, 14)), (2, 5, (0, 9)), (0, 5, (0, 4)), (0, 4, (0, 0)),
        (0, 0, (0, 0)), (0, 0, None),
    ]  # fmt: skip
    clock.advance(scheduler.prune_every)  # idle: a minute later, it looks again
    assert scheduler.run_once().backlog == Backlog(0, 0, BACKLOG_CAP)


def test_a_lasting_backlog_is_warned_of_once_and_its_end_told(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    finished_long_ago(store, 6)
    clock = FakeClock()
    pruner = Retention(store, HOUR, batch=2, budget=0, clock=clock)
    caplog.set_level(logging.INFO, logger="tenure.scheduler")
    for _ in range(5):  # a backlog for 400 s: warned of at 300 s
        pruner.prune()
        clock.advance(retention.BEHIND_AFTER / 3)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "retention is falling behind" in warnings[0] and "--prune-budget" in warnings[0]
    while pruner.prune().backlog.rows:
        pass
    assert caplog.records[-1].levelno == logging.INFO
    assert "retention caught up" in caplog.records[-1].getMessage()
