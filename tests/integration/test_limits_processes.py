"""Concurrency limits and ordered keys with real worker processes (3
processes of 4 threads each): every execution's interval is recorded by the
task itself (tests/apps/limited.py), and the intervals show a topic's limit
and a key's most reached and never exceeded while other work runs beside
them, and an ordered key's tasks one at a time in enqueue order, across a
SIGKILL of the worker running one of them; the starts' times show a topic's
rate reached and kept over every sliding window, and a lone key's task
started within a few reservations behind another key's 10,000."""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tenure import Status, Store
from tenure.store import TaskFilter
from tests.apps.limited import free, keyed, ledger, tenant, topical
from tests.integration.workers import WorkerProcess, enqueue, wait_for, wait_until

pytestmark = pytest.mark.slow

APP = "tests.apps.limited:app"


@dataclass
class Stint:
    """One execution: its task's key and number, attempt, process, and times
    (``end`` is None for one whose process was killed)."""

    key: str
    n: int
    attempt: int
    pid: int
    start: float
    end: float | None = None


def stints(path: Path) -> list[Stint]:
    """The executions the tasks noted, by start."""
    found: dict[tuple[str, int, int], Stint] = {}
    for line in path.read_text().splitlines():
        what, key, n, attempt, pid, at = line.split()
        ident = (key, int(n), int(attempt))
        if what == "start":
            found[ident] = Stint(key, int(n), int(attempt), int(pid), float(at))
        else:
            found[ident].end = float(at)
    return sorted(found.values(), key=lambda s: s.start)


def most_at_once(runs: list[Stint]) -> int:
    """The most executions under way at one moment (an end before a start at
    the same moment)."""
    moments = sorted(
        [(s.start, 1) for s in runs] + [(s.end, -1) for s in runs if s.end is not None]
    )
    most = now = 0
    for _, step in moments:
        now += step
        most = max(most, now)
    return most


@pytest.fixture
def noted(store_url: str, workers: list[WorkerProcess], tmp_path: Path) -> Iterator[Path]:
    """Where the tasks note their executions, with three workers of four
    threads running them (leases of 3 s, kept alive while a worker lives)."""
    path = tmp_path / "stints"
    path.touch()
    for _ in range(3):
        workers.append(
            WorkerProcess(
                store_url,
                "--concurrency",
                "4",
                "--lease",
                "3",
                app=APP,
                env={"TENURE_STINTS": str(path)},
            )
        )
    return path


def all_done(store: Store, count: int, timeout: float = 60) -> None:
    wait_for(lambda: store.task_count(TaskFilter(status=Status.DONE)) == count,
             f"{count} tasks done", timeout=timeout)  # fmt: skip


def test_a_topic_limit_is_reached_never_exceeded_and_other_topics_flow(
    store: Store, noted: Path
) -> None:
    store.topic_limit("limited", 3)
    for n in range(40):
        enqueue(store, topical, "limited", n, 0.05)
        enqueue(store, free, "free", n, 0.05)
    all_done(store, 80)
    runs = stints(noted)
    assert len(runs) == 80 and all(s.end is not None for s in runs)
    assert most_at_once([s for s in runs if s.key == "limited"]) == 3
    assert most_at_once(runs) > 3  # the unlimited tasks ran beside them


def test_a_key_runs_at_most_its_most_while_other_keys_run(store: Store, noted: Path) -> None:
    for n in range(30):
        enqueue(store, keyed, "a", n, 0.05)
        enqueue(store, keyed, "b", n, 0.05)
    lone = enqueue(store, keyed, "c", 0, 0.05)
    all_done(store, 61)
    runs = stints(noted)
    for key in ("a", "b"):
        assert most_at_once([s for s in runs if s.key == key]) == 2, key
    assert most_at_once(runs) >= 4  # keys in parallel
    # The lone key's task is not held behind the others' backlogs.
    [c] = [s for s in runs if s.key == "c"]
    assert c.start < max(s.start for s in runs if s.key in "ab"), lone.id


def test_an_ordered_key_runs_in_order_one_at_a_time_across_a_kill(
    store: Store, noted: Path, workers: list[WorkerProcess]
) -> None:
    for n in range(10):
        enqueue(store, ledger, "hold", n, 0.02)
        enqueue(store, ledger, "other", n, 0.02)
    held = wait_for(
        lambda: next((s for s in stints(noted) if (s.key, s.n) == ("hold", 5)), None),
        "task 5 of key hold started",
    )
    [holder] = [w for w in workers if w.pid == held.pid]
    holder.signal(signal.SIGKILL)
    killed = time.time()
    holder.wait_exit(10)
    all_done(store, 20, timeout=90)
    runs = stints(noted)
    for key in ("hold", "other"):
        mine = [s for s in runs if s.key == key]
        # In enqueue order, one at a time. A task the killed worker ran, whose
        # end it had not yet written, runs again (at least once): next, as
        # its key's first unfinished task.
        assert [s.n for s in mine] == sorted(s.n for s in mine), key
        assert {s.n for s in mine if s.end is not None} == set(range(10)), key
        for before, after in itertools.pairwise(mine):
            assert after.start >= (killed if before.end is None else before.end), (before, after)
            assert after.n > before.n or after.attempt > before.attempt, (before, after)
    # Killed with its worker: task 5 of hold, and whatever else it ran then;
    # each ran again, in another worker, once its lease lapsed.
    lost = [s for s in runs if s.end is None]
    assert ("hold", 5, 1) in [(s.key, s.n, s.attempt) for s in lost]
    for stint in lost:
        assert stint.pid == held.pid
        rerun = next(s for s in runs if (s.key, s.n, s.attempt) == (stint.key, stint.n, 2))
        assert rerun.pid != held.pid and rerun.start >= killed


def test_a_topic_rate_holds_over_every_sliding_window(store: Store, noted: Path) -> None:
    """Ten starts a second at most: over the starts' own times (the store's
    clock, which the rate is measured on), no second holds eleven, and some
    hold ten."""
    store.topic_rate("limited", 10, per=1.0)
    for n in range(45):
        enqueue(store, topical, "rated", n, 0.01)
    all_done(store, 45)
    tasks = store.task_list(TaskFilter(topic="limited"), limit=100).tasks
    starts = sorted(t.started_at.timestamp() for t in tasks if t.started_at is not None)
    assert len(starts) == 45
    spans = [later - first for first, later in zip(starts, starts[10:], strict=False)]
    assert min(spans) >= 1.0, min(spans)
    tens = [later - first for first, later in zip(starts, starts[9:], strict=False)]
    assert min(tens) < 1.0  # the rate was reached, not merely kept under


def test_a_lone_keys_task_starts_within_a_few_reservations_behind_a_backlog(
    store: Store, store_url: str, workers: list[WorkerProcess], tmp_path: Path
) -> None:
    """10,000 tasks of one key are draining when another key's task comes:
    taken by priority and age alone it would start after them all; taking
    turns, it starts once the tasks the workers held (each at most 4 running
    and 4 ahead) and their reservations under way (as many again) have
    started, and one of the backlog's in its round: at most 3 x 16 + 3."""
    path = tmp_path / "stints"
    path.touch()
    store.task_create_many(
        [tenant.prepared(tenant.new_task(("big", n, 0.02), {})) for n in range(10_000)]
    )
    for _ in range(3):
        options = ("--concurrency", "4", "--prefetch", "4", "--lease", "3")
        workers.append(
            WorkerProcess(store_url, *options, app=APP, env={"TENURE_STINTS": str(path)})
        )
    wait_for(lambda: store.task_count(TaskFilter(topic="fair", status=Status.DONE)) >= 300,
             "the backlog draining")  # fmt: skip
    enqueued = time.time()
    lone = enqueue(store, tenant, "lone", 0, 0.02)
    wait_until(store, lone.id, lambda t: t.status is Status.DONE)
    runs = stints(path)
    [alone] = [s for s in runs if s.key == "lone"]
    ahead = [s for s in runs if s.key == "big" and enqueued < s.start < alone.start]
    assert len(ahead) <= 3 * 16 + 3, len(ahead)
    assert store.task_count(TaskFilter(topic="fair", status=Status.PENDING)) > 5_000
