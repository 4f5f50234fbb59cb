"""The demo: a few hundred tasks, two worker processes, one of them killed mid-run.

Run with ``make demo``. It uses ``tenure.App()``: the embedded SQLite file
``tenure.db`` in the working directory (or ``$TENURE_URL``). Worker B is killed
with SIGKILL while it holds tasks; worker A hosts the scheduler, whose
lease supervisor hands B's tasks back after one lease (2 s), and A runs them.
The summary ends with the event log's account of two tasks: one that ran once
(pending → running → done) and one that B was running when it died.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from examples.demo_tasks import app, resize, upload
from tenure import Event, Status
from tenure.store import TaskFilter

ROOT = Path(__file__).resolve().parents[1]
console = Console()


def start_worker(*options: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "tenure", "worker", "--app", "examples.demo_tasks:app"]
    command += ["--url", app.url, "--lease", "2", "--concurrency", "8", "--poll", "0.05"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # The argv is this interpreter and fixed options: nothing from outside reaches it.
    return subprocess.Popen(  # noqa: S603
        [*command, "--log-level", "WARNING", *options],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main() -> None:
    store = app.store
    group = f"demo-{uuid.uuid4().hex[:8]}"
    console.rule(f"tenure demo on {app.url}")
    resized = resize.options(group_id=group).enqueue_many([(i,) for i in range(240)])
    uploaded = upload.options(group_id=group).enqueue_many([{"batch": b} for b in range(60)])
    total = len(resized) + len(uploaded)
    console.print(f"enqueued {total} tasks in group {group}")

    worker_a = start_worker()  # hosts the scheduler
    worker_b = start_worker("--no-scheduler")
    killed_at = None
    started = time.monotonic()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn(), console=console) as progress:
        bar = progress.add_task("running", total=total)
        while True:
            finished = sum(
                store.task_count(TaskFilter(group_id=group, status=s))
                for s in (Status.DONE, Status.FAILED, Status.CANCELLED)
            )
            progress.update(bar, completed=finished)
            if killed_at is None and finished >= total * 0.4 and running_on(worker_b.pid):
                worker_b.send_signal(signal.SIGKILL)
                killed_at = store.clock_now()
                held = running_on(worker_b.pid)
                progress.console.print(
                    f"[red]worker B killed with SIGKILL while holding {held} tasks[/red]"
                )
            if finished == total:
                break
            time.sleep(0.1)
    elapsed = time.monotonic() - started
    worker_a.send_signal(signal.SIGTERM)
    worker_a.wait(30)
    if killed_at is None:  # on a starved machine A may have taken everything
        worker_b.send_signal(signal.SIGTERM)
        console.print("[yellow]worker B never held a task, so there was nothing to kill[/yellow]")
    worker_b.wait(30)
    summarize(group, elapsed, worker_b.pid, killed_at)
    app.close()


def running_on(pid: int) -> int:
    """How many tasks the worker process ``pid`` holds (leased), as the store says."""
    owner = next((w.id for w in app.store.worker_list() if w.pid == pid), None)
    running = app.store.task_list(TaskFilter(status=Status.RUNNING), limit=1000).tasks
    return sum(1 for task in running if owner is not None and task.lease_owner == owner)


def summarize(group: str, elapsed: float, victim_pid: int, killed_at: datetime | None) -> None:
    store = app.store
    tasks = store.task_list_group(group)
    ids = {t.id for t in tasks}
    events = [e for e in all_events() if e.task_id in ids]
    victim = next((w.id for w in store.worker_list() if w.pid == victim_pid), None)
    # B was dead after killed_at: any of its leases ending later was revoked by the supervisor
    recovered = {
        e.task_id
        for e in events
        if killed_at and e.owner == victim and e.at > killed_at and e.from_status
    }
    table = Table(title="summary", show_header=False)
    for status in Status:
        count = sum(1 for t in tasks if t.status is status)
        if count:
            table.add_row(f"tasks {status}", str(count))
    table.add_row("retried after a failure", str(sum(1 for t in tasks if t.error is not None)))
    table.add_row("recovered from killed worker B", str(len(recovered)))
    table.add_row("transitions in the event log", str(len(events)))
    table.add_row("wall time", f"{elapsed:.1f} s ({len(tasks) / elapsed:.0f} tasks/s)")
    console.print(table)
    once = [t.id for t in tasks if t.id not in recovered and t.attempts == 1][:1]
    histories = [("a task that ran once", i) for i in once]
    histories += [("a task worker B held when it died", i) for i in sorted(recovered)[:1]]
    names = {victim: "B"} if victim else {}
    for title, task_id in histories:
        console.print(f"{title} ({task_id}):")
        for event in (e for e in events if e.task_id == task_id):
            who = names.get(event.owner or "", "A" if event.owner else "-")
            console.print(
                f"  {event.at:%H:%M:%S.%f}"[:-3]
                + f"  {event.from_status or '(new)':>9} → {event.to_status:<9}"
                f" attempt {event.attempt}  worker {who}"
            )


def all_events() -> list[Event]:
    events: list[Event] = []
    while page := app.store.event_list(after=events[-1].cursor if events else None, limit=10_000):
        events.extend(page)
    return events


if __name__ == "__main__":
    main()
