"""Scaling a running worker (``tenure workers scale``), for each pool: the
executions under way at once, as the tasks themselves note them
(tests/apps/limited.py), follow its new concurrency, up and down and up
again, from its next heartbeat; no task is lost or run twice."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tenure import Status, Store, open_store
from tenure.cli import main
from tenure.store import TaskFilter
from tests.apps.limited import afree, free
from tests.integration.test_limits_processes import APP, Stint, stints
from tests.integration.workers import WorkerProcess, enqueue, wait_for

pytestmark = pytest.mark.slow

TASKS = 600
STINT = 0.1


def most_within(runs: list[Stint], low: float, high: float) -> int:
    """The most executions under way at one moment from ``low`` to ``high``
    (one not ended yet runs on to ``high``)."""
    moments = sorted(
        step
        for s in runs
        if s.start < high and (s.end is None or s.end > low)
        for step in ((max(s.start, low), 1), (min(s.end or high, high), -1))
    )
    most = now = 0
    for _, change in moments:
        now += change
        most = max(most, now)
    return most


def scale(url: str, worker: WorkerProcess, to: int, was: int) -> tuple[float, float]:
    """Scale the one worker to ``to``: when it was asked, and when it said it
    took the number."""
    asked = time.time()
    [row] = _workers(url)
    assert main(["workers", "scale", row, str(to), "--url", url]) == 0
    worker.wait_for_log(f"concurrency {to}, was {was} (scaled)")
    return asked, time.time()


def _workers(url: str) -> list[str]:
    with open_store(url) as store:
        return [w.id for w in store.worker_list()]


def reach(noted: Path, most: int) -> None:
    """Wait until ``most`` executions are under way at once (new children of
    a process pool import the App first)."""
    wait_for(lambda: most_within(stints(noted), time.time() - 0.3, time.time()) == most,
             f"{most} under way at once", timeout=20)  # fmt: skip


@pytest.mark.parametrize("pool", ["threads", "processes", "async"])
def test_a_scaled_workers_executions_follow_its_concurrency(
    store: Store, store_url: str, workers: list[WorkerProcess], tmp_path: Path, pool: str
) -> None:
    noted = tmp_path / "stints"
    noted.touch()
    options = ("--concurrency", "2", "--pool", pool, "--heartbeat", "0.2", "--no-scheduler")
    worker = WorkerProcess(store_url, *options, app=APP, env={"TENURE_STINTS": str(noted)})
    workers.append(worker)
    task = afree if pool == "async" else free
    ids = {enqueue(store, task, "k", n, STINT).id for n in range(TASKS)}
    reach(noted, 2)
    up, _ = scale(store_url, worker, 6, 2)
    reach(noted, 6)
    time.sleep(0.5)
    down, took = scale(store_url, worker, 1, 6)
    reach(noted, 1)
    time.sleep(0.5)
    again, _ = scale(store_url, worker, 8, 1)
    reach(noted, 8)
    wait_for(lambda: store.task_count(TaskFilter(topic="keyed", status=Status.DONE)) == TASKS,
             "every task done", timeout=60)  # fmt: skip
    runs = stints(noted)
    # Reached, and never exceeded, in each span; the running ones end as they
    # do (a task of STINT seconds) once a lower number is taken.
    assert most_within(runs, runs[0].start, up) == 2
    assert most_within(runs, up, down) == 6
    assert most_within(runs, took + STINT + 0.1, again) == 1
    assert most_within(runs, again, runs[-1].end or again) == 8
    done = store.task_list(TaskFilter(topic="keyed"), limit=TASKS).tasks
    assert {t.id for t in done} == ids and all(t.attempts == 1 for t in done)
    assert len(runs) == TASKS
