"""Unique tasks under real concurrency: worker processes and enqueuing processes
on every store, with each execution's interval journaled to a file."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import threading
import time
from collections.abc import Iterator
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from tenure import Status, Store
from tenure.store import TaskFilter
from tests.apps import unique
from tests.integration.workers import WorkerProcess, enqueue

pytestmark = pytest.mark.slow

APP = "tests.apps.unique:app"
FINAL = (Status.DONE, Status.FAILED, Status.CANCELLED)


@pytest.fixture
def workers() -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for worker in started:
        worker.stop()


def intervals(journal: Path) -> list[tuple[float, float]]:
    """Every journaled execution as (start, end), in order of start."""
    lines = journal.read_text().split() if journal.exists() else []
    triples = [lines[i : i + 3] for i in range(0, len(lines), 3)]
    return sorted((float(start), float(end)) for start, end, _ in triples)


def assert_never_overlapping(runs: list[tuple[float, float]]) -> None:
    for (_, end), (start, _) in itertools.pairwise(runs):
        assert start >= end, f"an execution started at {start} before another ended at {end}"


def wait_all_final(store: Store, name: str, expected: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while True:
        tasks = store.task_list(TaskFilter(name=name), limit=10_000).tasks
        if len(tasks) == expected and all(task.status in FINAL for task in tasks):
            return
        assert time.monotonic() < deadline, f"not all final: {[t.status for t in tasks]}"
        time.sleep(0.05)


def test_identical_while_executing_tasks_never_run_at_the_same_time(
    store: Store, store_url: str, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    journal = tmp_path / "runs.txt"
    count = 24
    for _ in range(count):
        enqueue(store, unique.exclusive, str(journal), 0.03)
    for _ in range(3):
        workers.append(WorkerProcess(store_url, "--concurrency", "4", app=APP))
    wait_all_final(store, unique.exclusive.name, count)
    done = store.task_count(TaskFilter(name=unique.exclusive.name, status=Status.DONE))
    assert done == count
    runs = intervals(journal)
    assert len(runs) == count
    assert_never_overlapping(runs)
    # The workers really competed: twins were refused at start and rescheduled.
    events = store.event_list(limit=10_000)
    assert sum(e.to_status is Status.PENDING and e.from_status is Status.RUNNING for e in events)


def enqueue_many_times(url: str, path: str, times: int, out: str, start: Barrier) -> None:
    """In a child process: try to enqueue the singleton ``times`` times."""
    unique.app.use(url)
    start.wait()
    created = rejected = 0
    for _ in range(times):
        handle = unique.singleton.enqueue(path, 0.01)
        if handle.rejected is None:
            created += 1
        else:
            assert handle.rejected.holder is not None
            rejected += 1
    unique.app.close()
    Path(out).write_text(json.dumps([created, rejected]))


def test_concurrent_enqueuers_of_an_until_executed_task_keep_one_alive_at_a_time(
    store: Store, store_url: str, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    journal, name = tmp_path / "runs.txt", unique.singleton.name
    workers.append(WorkerProcess(store_url, "--concurrency", "4", app=APP))
    ctx = multiprocessing.get_context("spawn")
    processes, times = 4, 150
    start = ctx.Barrier(processes + 1, timeout=120)
    outs = [tmp_path / f"enqueuer-{i}.json" for i in range(processes)]
    procs = [
        ctx.Process(target=enqueue_many_times, args=(store_url, str(journal), times, str(o), start))
        for o in outs
    ]
    alive_counts: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        # Each listing is one snapshot of the store: it must never show two
        # unfinished singletons.
        while not stop.is_set():
            tasks = store.task_list(TaskFilter(name=name), limit=10_000).tasks
            alive_counts.append(sum(task.status not in FINAL for task in tasks))

    for proc in procs:
        proc.start()
    sampler = threading.Thread(target=sample)
    sampler.start()
    start.wait()
    try:
        for proc in procs:
            proc.join(timeout=180)
            assert proc.exitcode == 0, f"an enqueuer exited with {proc.exitcode}"
    finally:
        stop.set()
        sampler.join()
        for proc in procs:
            if proc.is_alive():
                proc.kill()
    results = [json.loads(out.read_text()) for out in outs]
    created = sum(c for c, _ in results)
    assert sum(c + r for c, r in results) == processes * times
    assert created >= 1 and len(alive_counts) > 10
    assert max(alive_counts) == 1
    wait_all_final(store, name, created)
    assert store.task_count(TaskFilter(name=name, status=Status.DONE)) == created
    runs = intervals(journal)
    assert len(runs) == created
    assert_never_overlapping(runs)


def test_the_seed_walk_through_two_jobs_one_lock_at_runtime(
    store: Store, store_url: str, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    # Cloudtasker's UniqAtRuntimeWorker: two identical jobs, while_executing +
    # reschedule; its 10 s of work and 5 s reschedule scaled down to 1 s and 0.5 s.
    journal = tmp_path / "runs.txt"
    job1 = enqueue(store, unique.uniq_at_runtime, str(journal), 1.0)
    job2 = enqueue(store, unique.uniq_at_runtime, str(journal), 1.0)
    workers.append(WorkerProcess(store_url, "--concurrency", "2", app=APP))
    wait_all_final(store, unique.uniq_at_runtime.name, 2, timeout=30)
    first, second = intervals(journal)
    assert second[0] >= first[1]  # job 2 started only once job 1 had finished
    events = store.event_list(limit=10_000)
    reschedules = [
        e.task_id
        for e in events
        if (e.from_status, e.to_status) == (Status.RUNNING, Status.PENDING)
    ]
    # Job 1 ran once, untouched; job 2 was turned away while job 1 worked
    # (about twice: 1 s of work, retried every 0.5 s), then ran.
    assert job1.id not in reschedules and reschedules.count(job2.id) >= 1
    for task_id in (job1.id, job2.id):
        task = store.task_get(task_id)
        assert task is not None and task.status is Status.DONE and task.attempts == 1
