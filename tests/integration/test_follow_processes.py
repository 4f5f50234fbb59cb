"""Following the event log from other processes, and the observer's reports made
by racing schedulers: real OS processes, on SQLite and PostgreSQL.

The follower is ``tenure events --follow --json``: one JSON line per event, the
way an operator or a log shipper follows. It is SIGKILLed midway and started
again from the cursor of the last line it printed whole; together the two runs
must hold every event of the store exactly once, each task's in order.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from tenure import Store
from tenure.store import NewTask, TaskFilter
from tenure.task import Status
from tests.apps import basic
from tests.conformance.support import reach
from tests.integration.workers import ROOT, WorkerProcess, enqueue, wait_for

TASKS = 1000


class Follower:
    """``tenure events --follow --json`` in a process of its own; its stdout lines
    collected as they come."""

    def __init__(self, url: str, after: str | None = None) -> None:
        argv = [sys.executable, "-m", "tenure", "events", "--url", url, "--follow", "--json"]
        argv += ["--limit", "1"] if after is None else ["--after", after]
        self.process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
        self.process.stdout.close()

    def kill(self) -> list[dict[str, Any]]:
        """SIGKILL it; the events it printed whole (a line cut short is not one)."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        self._reader.join(10)
        return [json.loads(line) for line in self.lines if line.endswith("\n")]

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in list(self.lines) if line.endswith("\n")]


def test_a_killed_follower_resumes_from_its_cursor_missing_and_repeating_none(
    store: Store, store_url: str, workers: list[WorkerProcess]
) -> None:
    # The log starts with one event, so the first follower's tail has a cursor.
    store.task_create(NewTask(topic="marker", name="marker", id="marker"))
    first = Follower(store_url)
    wait_for(first.events, "the first follower's first line")
    workers.extend(WorkerProcess(store_url, "--concurrency", "4") for _ in range(2))
    ids = [enqueue(store, basic.add, i, i).id for i in range(TASKS // 2)]
    # Midway: killed past a thousand events, while half the tasks are still to
    # come; they are enqueued while no follower runs, the workers still busy.
    wait_for(lambda: len(first.events()) > TASKS, "a thousand events followed")
    before = first.kill()
    ids += [enqueue(store, basic.add, i, i).id for i in range(TASKS // 2, TASKS)]
    second = Follower(store_url, after=before[-1]["cursor"])
    try:
        wait_for(lambda: _all_done(store, ids), "every task done", timeout=120)
        total = 3 * TASKS + 1  # marker created; each task created, running, done
        wait_for(lambda: len(before) + len(second.events()) >= total, "every event followed")
    finally:
        after = second.kill()
    _check_exactly_once_in_order(store, before + after, ids)


def _all_done(store: Store, ids: list[str]) -> bool:
    return store.task_count(TaskFilter(status=Status.DONE, topic="basic")) == len(ids)


def _check_exactly_once_in_order(
    store: Store, followed: list[dict[str, Any]], ids: list[str]
) -> None:
    cursors = [event["cursor"] for event in followed]
    assert len(cursors) == len(set(cursors)), "an event was delivered twice"
    logged = [event.cursor for event in _whole_log(store)]
    assert cursors == logged, "the followers' events are not the store's log, in its order"
    per_task: dict[str, list[str]] = {}
    for event in followed:
        per_task.setdefault(event["task_id"], []).append(event["kind"])
    assert all(per_task[task_id] == ["created", "running", "done"] for task_id in ids)


def _whole_log(store: Store) -> list[Any]:
    events, after = [], None
    while page := store.event_list(after=after, limit=1000):
        events.extend(page)
        after = page[-1].cursor
    return events


def test_two_schedulers_report_the_observer_queries_once_per_slot_at_their_times(
    store: Store, store_url: str, workers: list[WorkerProcess]
) -> None:
    now = store.clock_now()
    done_at, aged_at = _second(now + timedelta(seconds=4)), _second(now + timedelta(seconds=7))
    done = _finish_one(store)
    old = store.task_create(NewTask(topic="waiting", name="n", id="old")).id
    env = {
        "TENURE_TEST_DONE_AT": f"{done_at:%H:%M:%S}",
        "TENURE_TEST_AGED_AT": f"{aged_at:%H:%M:%S}",
    }
    for _ in range(2):
        workers.append(_scheduler(store_url, env))
    reports = wait_for(lambda: _both(store), "both reports", timeout=30)
    young = store.task_create(NewTask(topic="waiting", name="n", id="young")).id
    by_key = {report.key: report for report in reports}
    assert by_key["tasks-that-done"].task_ids == (done,)
    assert by_key[_AGED].task_ids == (done, old)  # oldest first; not the young one
    assert young not in by_key[_AGED].task_ids
    for report, at in ((by_key["tasks-that-done"], done_at), (by_key[_AGED], aged_at)):
        assert report.slot == at
        assert at <= report.run_at < at + timedelta(seconds=3), "not run at its time"
    # Both schedulers stayed up past both slots: still one report event each.
    wait_for(lambda: store.clock_now() > aged_at + timedelta(seconds=2), "two more cycles")
    reported = [e.name for e in _whole_log(store) if e.kind == "report"]
    assert sorted(reported) == sorted(["tasks-that-done", _AGED])
    assert all(worker.process.poll() is None for worker in workers)


_AGED = "tasks-that-created-at-least-1second-before"


def _second(moment: datetime) -> datetime:
    return moment.replace(microsecond=0).astimezone(UTC)


def _finish_one(store: Store) -> str:
    task, _ = reach(store, Status.DONE)
    return task.id


def _both(store: Store) -> list[Any]:
    reports = store.report_list()
    return reports if len(reports) == 2 else []


def _scheduler(url: str, env: dict[str, str]) -> WorkerProcess:
    options = ("--interval", "0.2", "--leader-lease", "2")
    return WorkerProcess(
        url, *options, app="tests.apps.observed:app", command="scheduler", env=env,
        ready="standing by",
    )  # fmt: skip
