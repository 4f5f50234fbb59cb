"""Deadlines with real worker processes (3 processes of 4 threads each) that
drain a backlog longer than the deadline: every task that was reserved, was
reserved before its deadline; the others never ran: the scheduler hosted by the
workers swept them, or the worker that held one ahead ended it unbegun,
cancelled, ``Expired``; none is lost. With one thread and a deep prefetch, a
task's own record of when it began shows none began past its deadline."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tenure import Status, Store
from tenure.store import TaskFilter
from tests.apps import recycled
from tests.apps.basic import naps
from tests.integration.workers import WorkerProcess, wait_for

pytestmark = pytest.mark.slow

TASKS = 400
NAP = 0.05
EXPIRES = 1.0
"""12 threads start about 240 tasks a second: the backlog outlasts the deadline."""


def test_an_expired_task_never_starts(store: Store, three_by_four: list[WorkerProcess]) -> None:
    made = naps.options(expires=EXPIRES)
    tasks = store.task_create_many([made.new_task((NAP,), {}) for _ in range(TASKS)])
    ended = TaskFilter(topic="basic")
    wait_for(lambda: all(t.finished for t in store.task_list(ended, limit=TASKS).tasks),
             "every task ended (run, or swept)", timeout=60)  # fmt: skip
    final = store.task_list(ended, limit=TASKS).tasks
    assert {t.id for t in final} == {t.id for t in tasks}
    ran = [t for t in final if t.status is Status.DONE]
    swept = [t for t in final if t.status is Status.CANCELLED]
    assert ran and swept and len(ran) + len(swept) == TASKS
    for task in ran:
        assert task.started_at is not None and task.expires_at is not None
        assert task.started_at < task.expires_at, task
    for task in swept:  # never reserved (swept), or reserved ahead and ended unbegun
        assert task.error is not None and task.error.type == "Expired"
        assert task.result is None and task.attempts <= 1
    assert any(t.started_at is None for t in swept), "the scheduler's sweep ended none"


@pytest.fixture
def one_at_a_time(store_url: str) -> Iterator[WorkerProcess]:
    process = WorkerProcess(store_url, "--concurrency", "1", "--prefetch", "8",
                            app="tests.apps.recycled:app")  # fmt: skip
    yield process
    process.stop()


def test_a_task_reserved_ahead_does_not_begin_past_its_deadline(
    store: Store, one_at_a_time: WorkerProcess
) -> None:
    """Reserved ahead (prefetch), a task waits in the worker behind the one
    running: past its deadline by then, it ends cancelled there, never begun."""
    made = recycled.begins.options(expires=1.0)
    tasks = store.task_create_many([made.new_task((0.3,), {}) for _ in range(10)])
    mine = TaskFilter(topic="recycled")
    wait_for(lambda: all(t.finished for t in store.task_list(mine, limit=20).tasks),
             "every task ended", timeout=60)  # fmt: skip
    final = {t.id: t for t in store.task_list(mine, limit=20).tasks}
    assert set(final) == {t.id for t in tasks}
    ran = [t for t in final.values() if t.status is Status.DONE]
    expired = [t for t in final.values() if t.status is Status.CANCELLED]
    assert ran and expired
    for task in ran:
        assert task.expires_at is not None and task.result < task.expires_at.timestamp()
    for task in expired:
        assert task.error is not None and task.error.type == "Expired" and task.result is None
