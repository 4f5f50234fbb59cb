"""Real worker processes against each store: results, retries, timeouts, snooze,
fencing, graceful shutdown, tags and pools."""

from __future__ import annotations

import itertools
import os
import re
import signal
import socket
import time
from pathlib import Path

import pytest

from tenure import Status, Store, Task, cli
from tenure.store.types import WorkerInfo
from tests.apps import basic, slow_import
from tests.integration.workers import WorkerProcess, enqueue, finished, wait_for, wait_until

pytestmark = pytest.mark.slow


def test_results_round_trip(store: Store, start) -> None:  # type: ignore[no-untyped-def]
    start()
    task = enqueue(store, basic.add, 2, b=3)
    done = wait_until(store, task.id, finished)
    assert (done.status, done.result) == (Status.DONE, 5)
    assert done.assignee is not None and done.started_at is not None
    assert done.finished_at is not None and done.duration is not None and done.duration >= 0


def test_retries_back_off_and_lower_priority(store: Store, start) -> None:  # type: ignore[no-untyped-def]
    start()
    task = enqueue(store, basic.flaky, 2)
    done = wait_until(store, task.id, finished)
    assert (done.status, done.result, done.attempts) == (Status.DONE, {"attempt": 3}, 3)
    assert done.priority == -2  # lowered by one on each retry
    events = [e for e in store.event_list(limit=1000) if e.task_id == task.id]
    path = [(e.from_status, e.to_status) for e in events]
    retry = (Status.RUNNING, Status.PENDING)
    assert path.count(retry) == 2
    for failed_at, restarted in itertools.pairwise(events):
        if (failed_at.from_status, failed_at.to_status) == retry:
            waited = (restarted.at - failed_at.at).total_seconds()
            assert waited >= 0.02  # backoff base 0.05 s, jitter at most halves it


def test_last_failure_is_kept_with_traceback(store: Store, start) -> None:  # type: ignore[no-untyped-def]
    start()
    task = enqueue(store, basic.always_fails)
    failed = wait_until(store, task.id, finished)
    assert failed.status is Status.FAILED and failed.attempts == 2
    assert failed.error is not None
    assert (failed.error.type, failed.error.message) == ("RuntimeError", "always")
    assert "Traceback" in failed.error.traceback and "always_fails" in failed.error.traceback


def await_file(path: Path, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.01)
    return path.read_text()


def timed_out(store: Store, task: Task) -> Task:
    failed = wait_until(store, task.id, finished, timeout=30)
    assert failed.status is Status.FAILED
    assert failed.error is not None and failed.error.type == "TimeoutError"
    assert failed.duration is not None and failed.duration < 5  # cut at 0.3 s
    return failed


def test_timeout_abandons_a_thread_and_discards_its_late_outcome(  # type: ignore[no-untyped-def]
    store: Store, start, tmp_path: Path
) -> None:
    worker = start("--pool", "threads")
    failed = timed_out(store, enqueue(store, basic.overruns, str(tmp_path)))
    assert int(await_file(tmp_path / "pid")) == worker.pid
    (tmp_path / "gate").touch()  # the abandoned thread now returns "late"...
    await_file(tmp_path / "returned")
    after = enqueue(store, basic.add, 1, 1)  # ... before this task, on a free slot
    assert wait_until(store, after.id, finished).result == 2
    assert store.task_get(failed.id) == failed  # ... and nothing of it was written


def test_timeout_kills_the_child_process(store: Store, start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    worker = start("--pool", "processes")
    timed_out(store, enqueue(store, basic.overruns, str(tmp_path)))
    child = int(await_file(tmp_path / "pid"))
    assert child != worker.pid
    deadline = time.monotonic() + 30
    while child_alive(child):
        assert time.monotonic() < deadline, f"the child {child} still runs"
        time.sleep(0.01)
    # a fresh child serves the next task
    done = wait_until(store, enqueue(store, basic.whoami).id, finished, timeout=30)
    assert done.status is Status.DONE and done.result["pid"] not in (worker.pid, child)


def test_a_slow_app_import_in_a_child_does_not_count_against_the_timeout(
    store: Store, store_url: str, workers: list[WorkerProcess]
) -> None:
    # The children import the App for 1 s; the task may run for 0.5 s. Enqueued
    # as the worker starts, it waits for a ready child and runs well in time.
    workers.append(
        WorkerProcess(store_url, "--pool", "processes", app="tests.apps.slow_import:app")
    )
    task = enqueue(store, slow_import.quick)
    done = wait_until(store, task.id, finished, timeout=30)
    assert done.status is Status.DONE, done.error
    assert done.attempts == 1 and done.result != workers[0].pid


def child_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_timeout_cancels_the_coroutine(store: Store, start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    start("--pool", "async")
    timed_out(store, enqueue(store, basic.async_overruns, str(tmp_path)))
    assert await_file(tmp_path / "cancelled") == "CancelledError"


def test_snooze_then_resume(store: Store, start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    start()
    marker = tmp_path / "snoozed"
    task = enqueue(store, basic.snoozes_then_runs, str(marker), 60)
    snoozed = wait_until(store, task.id, lambda t: t.status is Status.SNOOZED)
    assert snoozed.attempts == 0 and snoozed.lease_seconds == 60
    woken = store.task_revoke(task.id, snoozed.record_ver)  # what the supervisor does
    assert woken is not None and woken.status is Status.PENDING
    done = wait_until(store, task.id, finished)
    assert (done.status, done.result, done.attempts) == (Status.DONE, "after snooze", 1)


def test_supervisor_wakes_a_snoozed_task_which_then_runs_again(  # type: ignore[no-untyped-def]
    store: Store, start, tmp_path: Path
) -> None:
    worker = start()  # it hosts the scheduler, whose supervisor wakes snoozed tasks
    task = enqueue(store, basic.snoozes_then_runs, str(tmp_path / "snoozed"), 1)
    done = wait_until(store, task.id, finished)
    assert (done.status, done.result, done.attempts) == (Status.DONE, "after snooze", 1)
    # the supervisor's revoke is what woke it
    worker.wait_for_log(f"task {task.id} {basic.snoozes_then_runs.name} woke up from its snooze")
    events = [e for e in store.event_list() if e.task_id == task.id]
    path = [(e.from_status, e.to_status) for e in events]
    assert path == [
        (None, Status.PENDING),
        (Status.PENDING, Status.RUNNING),
        (Status.RUNNING, Status.SNOOZED),
        (Status.SNOOZED, Status.PENDING),
        (Status.PENDING, Status.RUNNING),
        (Status.RUNNING, Status.DONE),
    ]
    slept = (events[3].at - events[2].at).total_seconds()
    assert slept >= 0.99  # never woken before its snooze ends (0.01: clock rounding)


def test_retry_spends_an_attempt_and_waits_the_time_asked(store: Store, start) -> None:  # type: ignore[no-untyped-def]
    start()
    task = enqueue(store, basic.retries_later, 1.0)
    pending = wait_until(store, task.id, lambda t: t.status is Status.PENDING and t.attempts == 1)
    assert pending.run_at is not None and pending.updated_at is not None
    # in_, not the task's backoff (at most 0.2 s), counted from the failed attempt
    asked = (pending.run_at - pending.updated_at).total_seconds()
    assert asked == pytest.approx(1.0, abs=0.001)
    assert pending.error is not None and pending.error.type == "Retry"
    done = wait_until(store, task.id, finished)
    assert (done.status, done.result, done.attempts) == (Status.DONE, {"attempt": 2}, 2)
    assert done.started_at is not None and done.started_at >= pending.run_at


def test_worker_registers_itself_shows_what_it_holds_and_leaves_on_sigterm(  # type: ignore[no-untyped-def]
    store: Store,
    store_url: str,
    start,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    worker = start("--concurrency", "2", "--tags", "gpu,ssd")
    [row] = store.worker_list()  # its first heartbeat comes before it logs "started"
    assert (row.host, row.pid, row.topics, row.tags, row.pool, row.concurrency, row.held) == (
        socket.gethostname(),
        worker.pid,
        ("basic", "gpu-work"),
        ("gpu", "ssd"),
        "threads",
        2,
        0,
    )
    gate = tmp_path / "gate"
    task = enqueue(store, basic.blocks, str(gate))
    wait_until(store, task.id, lambda t: t.status is Status.RUNNING)

    def holding_one() -> WorkerInfo | None:
        return next((w for w in store.worker_list() if w.held == 1), None)

    beat = wait_for(holding_one, "a heartbeat with held=1")  # heartbeats come every 5 s
    assert beat.id == row.id and beat.started_at == row.started_at
    monkeypatch.setattr(cli.console, "width", 200)  # a wide terminal: no column cut
    assert cli.main(["--url", store_url, "workers"]) == 0
    listed = capsys.readouterr().out
    assert row.id in listed and "basic,gpu-work" in listed and "threadsx2" in listed
    gate.touch()
    wait_until(store, task.id, finished)
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit() == 0
    assert store.worker_list() == []


STARTED = re.compile(r"DEBUG tenure.worker task (\S+) (\S+) attempt=(\d+)/\d+ started$")
SUCCEEDED = re.compile(
    r"INFO tenure.worker task (\S+) (\S+) attempt=(\d+)/\d+ succeeded in (\S+)s$"
)


def test_worker_logs_each_start_and_ending_with_id_name_attempt_and_duration(  # type: ignore[no-untyped-def]
    store: Store, start
) -> None:
    worker = start("--log-level", "DEBUG")  # starts are DEBUG lines; endings say the rest
    naps, fails = basic.naps.name, basic.always_fails.name
    napped = enqueue(store, basic.naps, 0.2)
    failed = enqueue(store, basic.always_fails)
    retrying = worker.wait_for_log(f"task {failed.id} {fails} attempt=1/2 failed: ")
    final = worker.wait_for_log(f"task {failed.id} {fails} attempt=2/2 failed for good")
    worker.wait_for_log(f"task {napped.id} {naps} attempt=1/1 succeeded in")
    starts = [m.groups() for line in worker.lines if (m := STARTED.search(line))]
    assert sorted(starts) == sorted(
        [(napped.id, naps, "1"), (failed.id, fails, "1"), (failed.id, fails, "2")]
    )
    [nap] = [float(m[4]) for line in worker.lines if (m := SUCCEEDED.search(line))]
    assert nap >= 0.2  # it slept 0.2 s
    # A failure says what was raised, at WARNING while retries remain and at ERROR
    # once final, each followed by the exception's traceback.
    assert " WARNING tenure.worker " in retrying and "RuntimeError: always; retrying in" in retrying
    assert " ERROR tenure.worker " in final and "(no attempts left): RuntimeError: always" in final
    for line in (retrying, final):
        after = worker.lines[worker.lines.index(line) + 1 :]
        assert after[0] == "Traceback (most recent call last):"
        assert 'raise RuntimeError("always")' in "\n".join(after[:8])


def revoke_running(store: Store, running: Task) -> Task:
    """Revoke a running task as the supervisor does, by compare-and-set on its
    version. A keepalive bumps the version, so one landing between our read and
    our revoke makes the revoke lose the race (as it should): read again and retry."""
    deadline = time.monotonic() + 20
    current: Task | None = running
    while current is not None and current.status is Status.RUNNING:
        revoked = store.task_revoke(current.id, current.record_ver)
        if revoked is not None:
            return revoked
        assert time.monotonic() < deadline, f"could not revoke {current}"
        current = store.task_get(current.id)
    raise AssertionError(f"the task stopped running before it was revoked: {current}")


@pytest.mark.parametrize("taken_by", ["revoke", "cancel"])
def test_worker_whose_lease_is_taken_does_not_write(  # type: ignore[no-untyped-def]
    store: Store, start, tmp_path: Path, taken_by: str
) -> None:
    # A short lease, so the worker's next keepalive (every lease / 3) is refused soon.
    worker = start("--lease", "3")
    gate = tmp_path / "gate"
    task = enqueue(store, basic.blocks, str(gate))
    running = wait_until(store, task.id, lambda t: t.status is Status.RUNNING)
    # max_attempts 1: the revoked task fails
    taken = revoke_running(store, running) if taken_by == "revoke" else store.task_cancel(task.id)
    assert taken is not None and taken.finished
    worker.wait_for_log("lost its lease" if taken_by == "revoke" else "was cancelled")
    gate.touch()  # the abandoned execution now returns "late"
    marker = enqueue(store, basic.add, 1, 1)  # proves the worker went on working
    wait_until(store, marker.id, finished)
    assert store.task_get(task.id) == taken
    assert worker.process.poll() is None


def test_sigterm_lets_running_tasks_finish(store: Store, start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    worker = start("--grace", "30")
    gate, began = tmp_path / "gate", tmp_path / "began"
    task = enqueue(store, basic.blocks, str(gate), "finished in grace", str(began))
    basic.wait_for_file(str(began), limit=30)  # running, not only reserved
    assert began.exists()
    worker.signal(signal.SIGTERM)
    worker.wait_for_log("SIGTERM received")
    late = enqueue(store, basic.add, 1, 2)  # must not be taken while stopping
    gate.touch()
    assert worker.wait_exit() == 0
    done = store.task_get(task.id)
    assert done is not None and (done.status, done.result) == (Status.DONE, "finished in grace")
    after = store.task_get(late.id)
    assert after is not None and after.status is Status.PENDING


def test_sigterm_releases_what_outlives_the_grace(store: Store, start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    worker = start("--grace", "0.3", "--concurrency", "2")
    tasks = [enqueue(store, basic.blocks, str(tmp_path / "never")) for _ in range(2)]
    for task in tasks:
        wait_until(store, task.id, lambda t: t.status is Status.RUNNING)
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit() == 0
    first_owner = None
    for task in tasks:
        released = store.task_get(task.id)
        assert released is not None
        assert (released.status, released.attempts, released.lease_owner) == (
            Status.PENDING,
            0,
            None,
        )
        first_owner = released.assignee
    assert first_owner is not None
    start()  # another worker can start them at once
    (tmp_path / "never").touch()
    for task in tasks:
        done = wait_until(store, task.id, finished)
        assert done.status is Status.DONE
        assert done.assignee not in (None, first_owner)


def test_second_signal_stops_without_waiting(store: Store, start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    worker = start("--grace", "60")
    began = tmp_path / "began"
    task = enqueue(store, basic.blocks, str(tmp_path / "never"), "late", str(began))
    # Begun, not only reserved: a task held unbegun is released at once, with
    # nothing to wait for.
    wait_for(began.exists, "the task's start")
    worker.signal(signal.SIGINT)
    # As the stop begins it says what it waits for, and how to cut it short.
    waiting = worker.wait_for_log("waiting up to")
    assert waiting.endswith(
        "waiting up to 60 s for 1 running task (stop again, Ctrl-C or SIGTERM, to stop now: "
        "unfinished tasks go back to pending)"
    ), waiting
    worker.signal(signal.SIGINT)
    assert worker.wait_exit(timeout=10) == 0
    worker.wait_for_log(f"task {task.id} released to pending at shutdown")
    released = store.task_get(task.id)
    assert released is not None and released.status is Status.PENDING


def test_tags_route_tasks_to_workers_that_have_them(store: Store, start) -> None:  # type: ignore[no-untyped-def]
    plain_worker = start()
    # It says, as it starts, which of its App's tasks it can never take, and why.
    warning = plain_worker.wait_for_log(f"task {basic.on_gpu.name} requires tags gpu")
    assert " WARNING " in warning and "--tags gpu" in warning
    gpu = enqueue(store, basic.on_gpu)
    plain = enqueue(store, basic.add, 0, 0)
    wait_until(store, plain.id, finished)
    waiting = store.task_get(gpu.id)
    assert waiting is not None and waiting.status is Status.PENDING
    start("--tags", "gpu,ssd")
    done = wait_until(store, gpu.id, finished)
    assert (done.status, done.result) == (Status.DONE, "gpu")


def test_async_pool_runs_async_tasks(store: Store, start) -> None:  # type: ignore[no-untyped-def]
    start("--pool", "async")
    tasks = [enqueue(store, basic.async_add, i, i) for i in range(10)]
    results = [wait_until(store, t.id, finished).result for t in tasks]
    assert results == [2 * i for i in range(10)]


def test_process_pool_runs_tasks_in_child_processes(store: Store, start) -> None:  # type: ignore[no-untyped-def]
    worker = start("--pool", "processes", "--concurrency", "2")
    task = enqueue(store, basic.whoami)
    done = wait_until(store, task.id, finished, timeout=30)
    assert done.status is Status.DONE
    assert done.result["pid"] not in (worker.pid, os.getpid())
    assert done.result["attempt"] == 1 and done.result["token"] == done.lease_token


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_postgresql_names_a_workers_sessions_by_its_role(  # type: ignore[no-untyped-def]
    store: Store, store_url: str, start
) -> None:
    import psycopg

    worker = start()
    done = enqueue(store, basic.add, 2, 3)  # a task run: the pool's sessions are in use
    assert wait_until(store, done.id, finished).result == 5

    with psycopg.connect(store_url) as conn:
        names = {
            name
            for (name,) in conn.execute(
                "SELECT application_name FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                " AND client_port IS NOT NULL"
            )
        }
    # Its own sessions; the test's store is an App's in the test process.
    assert {"tenure-worker", "tenure-worker-listener"} <= names
    assert worker.process.poll() is None
