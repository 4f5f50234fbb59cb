"""What a real worker writes at the default level: one line per task, its ending
(starts are DEBUG lines), and, on SIGTERM, its shutdown lines, all of them out
before the process exits, though a thread of its own writes them."""

from __future__ import annotations

import signal

import pytest

from tenure import Status, Store
from tests.apps import basic
from tests.integration.workers import enqueue, finished, wait_until

pytestmark = pytest.mark.slow


def test_a_task_is_one_info_line_and_the_shutdown_lines_are_the_last(  # type: ignore[no-untyped-def]
    store: Store, start
) -> None:
    worker = start()
    [announced] = [line for line in worker.lines if " started: store=" in line]
    owner = announced.split(" worker ", 1)[1].split(" ", 1)[0]
    tasks = [enqueue(store, basic.add, number, b=1) for number in range(20)]
    for task in tasks:
        assert wait_until(store, task.id, finished).status is Status.DONE
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit() == 0
    for task in tasks:
        [line] = [line for line in worker.lines if f"task {task.id} " in line]
        assert " INFO tenure.worker " in line and " succeeded in " in line
    assert not [line for line in worker.lines if line.endswith(" started") and "task " in line]
    stopping = worker.lines.index(
        next(line for line in worker.lines if f"worker {owner}: SIGTERM received" in line)
    )
    assert worker.lines[stopping].endswith("SIGTERM received, stopping")
    assert worker.lines[-1].endswith(f"INFO tenure.worker worker {owner} stopped")
