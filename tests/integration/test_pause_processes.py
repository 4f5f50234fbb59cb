"""Pausing a topic, with real worker processes (3 processes of 4 threads each)
draining it: after the pause no task of the topic starts (beyond the poll that
was under way), the running ones finish, the pending ones wait without spending
an attempt; a resume starts them again, and every task runs once. The tasks a
worker reserved ahead go back to pending, unbegun, within a poll."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from tenure import Status, Store
from tenure.store import TaskFilter
from tests.apps.basic import blocks, naps
from tests.integration.workers import WorkerProcess, enqueue, wait_for

pytestmark = pytest.mark.slow

TASKS = 120
"""Far more than the 12 slots and what the workers reserve ahead: most are
pending when the pause comes."""


def test_a_pause_stops_new_starts_and_a_resume_restarts_them(
    store: Store, three_by_four: list[WorkerProcess], tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    ids = {enqueue(store, blocks, str(gate)).id for _ in range(TASKS)}
    # Every slot busy, held at the gate: the pause comes in the drain's midst
    # however slow this machine is.
    wait_for(lambda: store.task_count(TaskFilter(topic="basic", status=Status.RUNNING)) >= 12,
             "the drain under way")  # fmt: skip
    paused = store.topic_pause("basic")
    gate.touch()
    # The running ones end; none starts after the pause (and the poll under way).
    wait_for(lambda: store.task_count(TaskFilter(topic="basic", status=Status.RUNNING)) == 0,
             "the running tasks' ends")  # fmt: skip
    late = paused.paused_at + timedelta(seconds=0.5)
    before = {t.id: t for t in store.task_list(TaskFilter(topic="basic"), limit=TASKS).tasks}
    waiting = [t for t in before.values() if t.status is Status.PENDING]
    assert waiting, "the pause came after the drain: nothing was left to hold"
    assert all(t.attempts == 0 for t in waiting)
    started = [t.started_at for t in before.values() if t.started_at is not None]
    assert max(started) <= late, (max(started), paused.paused_at)
    # Still held a second later, twenty polls of every thread: an absence is
    # watched over a span, there is no event to wait for.
    time.sleep(1.0)
    pending = store.task_count(TaskFilter(topic="basic", status=Status.PENDING))
    assert pending == len(waiting)
    store.topic_resume("basic")
    wait_for(lambda: store.task_count(TaskFilter(topic="basic", status=Status.DONE)) == TASKS,
             "every task done after the resume", timeout=60)  # fmt: skip
    after = store.task_list(TaskFilter(topic="basic"), limit=TASKS).tasks
    assert {t.id for t in after} == ids and all(t.attempts == 1 for t in after)
    resumed = [t for t in after if t.id in {w.id for w in waiting}]
    assert all(t.started_at is not None and t.started_at > paused.paused_at for t in resumed)


def test_a_pause_hands_back_the_tasks_a_worker_reserved_ahead(
    store: Store, start: Callable[..., WorkerProcess], tmp_path: Path
) -> None:
    """A worker of one slot holding three tasks ahead of a blocked one: the
    pause sends the three back to pending within a poll, unbegun and their
    attempts given back, while the running one finishes; none starts until the
    resume."""
    worker = start("--concurrency", "1", "--prefetch", "3")
    gate = tmp_path / "gate"
    first = enqueue(store, blocks, str(gate))
    ahead = [enqueue(store, naps, 0.01) for _ in range(3)]
    wait_for(lambda: store.task_count(TaskFilter(topic="basic", status=Status.RUNNING)) == 4,
             "the blocked task running and three held ahead")  # fmt: skip
    store.topic_pause("basic")
    wait_for(lambda: store.task_count(TaskFilter(topic="basic", status=Status.PENDING)) == 3,
             "the three handed back", timeout=5)  # fmt: skip
    assert all(store.task_get(t.id).attempts == 0 for t in ahead)  # type: ignore[union-attr]
    assert worker.wait_for_log("released to pending unbegun, its topic paused")
    gate.touch()
    ended = wait_for(lambda: (t := store.task_get(first.id)) and t.finished and t,
                     "the blocked task's end")  # fmt: skip
    assert ended.status is Status.DONE
    time.sleep(0.5)  # ten polls: the three stay where the pause put them
    assert store.task_count(TaskFilter(topic="basic", status=Status.PENDING)) == 3
    store.topic_resume("basic")
    wait_for(lambda: store.task_count(TaskFilter(topic="basic", status=Status.DONE)) == 4,
             "every task done after the resume")  # fmt: skip
    assert all(store.task_get(t.id).attempts == 1 for t in ahead)  # type: ignore[union-attr]
