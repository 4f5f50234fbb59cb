"""The flow-control recipes (examples/flow_control.py, which the how-to page
includes) run as their docstring says: two ``tenure worker`` processes, one of
them the scheduler that stores the declared limit, rate and ageing, and
``python -m examples.flow_control`` enqueuing and waiting for every result.
What the store then holds shows the recipes kept: each account's entries, and
a tenant's exports, started in enqueue order, and the partner's calls at most
ten a second. (That a limit is never exceeded is shown by the process tests,
from the intervals the tasks themselves note: a start's time in the store is
read before the reservation waits its turn under the limit's lock.)"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from tenure import Status, Store, Task
from tenure.store import TaskFilter
from tests.integration.workers import WorkerProcess, wait_for

ROOT = Path(__file__).resolve().parents[2]
APP = "examples.flow_control:app"

pytestmark = pytest.mark.slow


def of(store: Store, topic: str) -> list[Task]:
    return store.task_list(TaskFilter(topic=topic), limit=100).tasks


def test_the_recipes_run_as_the_docs_say(
    store: Store, store_url: str, workers: list[WorkerProcess]
) -> None:
    for _ in range(2):
        workers.append(WorkerProcess(store_url, "--concurrency", "4", app=APP))
    wait_for(lambda: store.topic_limits() and store.topic_rates() and store.topic_ageings(),
             "the scheduler storing the declared limit, rate and ageing")  # fmt: skip
    env = {**os.environ, "TENURE_URL": store_url, "PYTHONPATH": str(ROOT)}
    ran = subprocess.run(
        [sys.executable, "-m", "examples.flow_control"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert len(ran.stdout.splitlines()) == 7 + 10 + 12 + 2
    finished = store.task_list(TaskFilter(), limit=100).tasks
    assert all(t.status is Status.DONE for t in finished)
    # Each account's entries, and the tenant's exports (at most one at once),
    # started in the order they were enqueued.
    for topic, key in (("ledger", "a"), ("ledger", "b"), ("exports", "acme")):
        tasks = [t for t in of(store, topic) if t.data["args"][0] == key]
        by_creation = sorted(tasks, key=lambda t: (t.created_at, t.id))
        assert sorted(tasks, key=lambda t: t.started_at) == by_creation  # type: ignore[arg-type,return-value]
    calls = sorted(t.started_at for t in of(store, "partner-api"))  # type: ignore[type-var]
    assert all(
        later - first >= timedelta(seconds=1)
        for first, later in zip(calls, calls[10:], strict=False)
    ), calls
