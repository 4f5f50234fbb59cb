"""Workers die and clocks lie: recovery with real processes on each store.

SIGKILL and SIGSTOP a worker mid-task, skew wall clocks by hours under
libfaketime, kill the elected scheduler, and race three schedulers on a cron
task. Leases are 2 s and scheduler cycles short, so the bound on recovery is
about lease + cycle.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from tenure import Status, Store, TaskFilter
from tests.apps import basic
from tests.integration.workers import (
    FAKETIME_LIB,
    ROOT,
    WorkerProcess,
    enqueue,
    finished,
    skewed,
    wait_until,
)

pytestmark = pytest.mark.slow

LEASE = 2.0
CYCLE = 1.0  # a worker's scheduler cycle (the default interval); it supervises twice a cycle
MARGIN = 1.5  # for a loaded machine: processes starved of CPU, slow fsyncs


@pytest.fixture
def processes() -> list[WorkerProcess]:
    started: list[WorkerProcess] = []
    yield started  # type: ignore[misc]
    for process in started:
        process.stop()


def worker(url: str, processes: list[WorkerProcess], *options: str, **kw: object) -> WorkerProcess:
    process = WorkerProcess(url, "--lease", str(LEASE), *options, **kw)  # type: ignore[arg-type]
    processes.append(process)
    return process


def scheduler(url: str, processes: list[WorkerProcess], **kw: object) -> WorkerProcess:
    process = WorkerProcess(
        url,
        "--interval",
        "0.2",
        command="scheduler",
        ready="standing by",
        **kw,  # type: ignore[arg-type]
    )
    processes.append(process)
    return process


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def restarts_after(store: Store, task_id: str, moment: datetime) -> list[datetime]:
    return [
        e.at
        for e in store.event_list(limit=10_000)
        if e.task_id == task_id and e.to_status is Status.RUNNING and e.at > moment
    ]


def test_sigkill_mid_task_is_recovered_within_lease_and_cycle(
    store: Store, store_url: str, tmp_path: Path, processes: list[WorkerProcess]
) -> None:
    gate = tmp_path / "gate"
    victim = worker(store_url, processes, "--no-scheduler", "--concurrency", "3")
    tasks = [enqueue(store, basic.holds, str(gate)) for _ in range(3)]
    for task in tasks:
        wait_until(store, task.id, lambda t: t.status is Status.RUNNING)
    rescuer = worker(store_url, processes)
    killed_at = store.clock_now()
    victim.process.kill()
    gate.touch()
    for task in tasks:
        done = wait_until(store, task.id, finished, timeout=30)
        assert done.status is Status.DONE
        assert done.attempts == 2
        assert done.result["pid"] == rescuer.pid
        [restarted] = restarts_after(store, task.id, killed_at)
        recovery = (restarted - killed_at).total_seconds()
        assert recovery <= LEASE + CYCLE + MARGIN, f"recovered after {recovery:.2f}s"


def test_sigkill_of_the_scheduler_leader_with_tasks_costs_no_extra_lease(
    store: Store, store_url: str, tmp_path: Path, processes: list[WorkerProcess]
) -> None:
    # The victim leads the scheduler (it started first) and holds tasks. The
    # rescuer stands by, watching leases: it takes the leadership one leader
    # lease (6 s) after the kill and revokes at once, since by then the tasks'
    # leases (4 s) have run out by its own clock. Without its watch it would
    # start counting a lease only once elected: 6 s + 4 s.
    lease, leader_lease = "4", 6.0
    gate = tmp_path / "gate"
    victim = worker(store_url, processes, "--lease", lease, "--leader-lease", str(leader_lease))
    victim.wait_for_log("elected")
    tasks = [enqueue(store, basic.holds, str(gate)) for _ in range(2)]
    for task in tasks:
        wait_until(store, task.id, lambda t: t.status is Status.RUNNING)
    # Its first watch comes as it starts (before or just after the kill: either
    # way within a lease of the last keepalive, well before it is elected).
    rescuer = worker(store_url, processes, "--lease", lease, "--leader-lease", str(leader_lease))
    killed_at = store.clock_now()
    victim.process.kill()
    gate.touch()
    for task in tasks:
        done = wait_until(store, task.id, finished, timeout=60)
        assert done.status is Status.DONE and done.result["pid"] == rescuer.pid
        [restarted] = restarts_after(store, task.id, killed_at)
        recovery = (restarted - killed_at).total_seconds()
        assert recovery <= leader_lease + 2 * CYCLE + MARGIN, f"recovered after {recovery:.2f}s"


def test_sigstopped_worker_loses_its_tasks_and_cannot_write_after_sigcont(
    store: Store, store_url: str, tmp_path: Path, processes: list[WorkerProcess]
) -> None:
    gate = tmp_path / "gate"
    zombie = worker(store_url, processes, "--no-scheduler")
    task = enqueue(store, basic.holds, str(gate))
    first = wait_until(store, task.id, lambda t: t.status is Status.RUNNING)
    rescuer = worker(store_url, processes)
    zombie.signal(signal.SIGSTOP)
    moved = wait_until(
        store, task.id, lambda t: t.status is Status.RUNNING and t.assignee != first.assignee
    )
    assert moved.lease_token is not None and first.lease_token is not None
    assert moved.lease_token > first.lease_token
    gate.touch()
    done = wait_until(store, task.id, finished)
    assert done.result == {"pid": rescuer.pid, "token": moved.lease_token}
    zombie.signal(signal.SIGCONT)  # it must stop itself, or be refused by the store
    zombie.wait_for_log("abandoning the execution", "ending discarded")
    assert store.task_get(task.id) == done
    assert zombie.process.poll() is None  # the zombie lives on, harmless


@pytest.mark.skipif(
    not FAKETIME_LIB.exists() and os.environ.get("CI") != "true",
    reason="libfaketime is not installed (apt-get install faketime)",
)
@pytest.mark.parametrize(("worker_skew", "scheduler_skew"), [("+2h", "-2h"), ("-2h", "+2h")])
def test_skewed_clocks_never_revoke_live_leases_and_still_recover_dead_ones(
    store: Store,
    store_url: str,
    tmp_path: Path,
    processes: list[WorkerProcess],
    worker_skew: str,
    scheduler_skew: str,
) -> None:
    gate = tmp_path / "gate"
    held = worker(
        store_url, processes, "--no-scheduler", "--concurrency", "3", env=skewed(worker_skew)
    )
    supervisor = scheduler(store_url, processes, env=skewed(scheduler_skew))
    # The skew is real: each process logs times by its own (moved) wall clock.
    assert_clock_moved(held, "started", worker_skew)
    assert_clock_moved(supervisor, "standing by", scheduler_skew)
    live = [enqueue(store, basic.holds, str(gate)) for _ in range(2)]
    for task in live:
        wait_until(store, task.id, lambda t: t.status is Status.RUNNING)
    deadline = time.monotonic() + 3 * LEASE  # held for three leases, kept alive
    while time.monotonic() < deadline:
        for task in live:
            current = store.task_get(task.id)
            assert current is not None and current.status is Status.RUNNING
        time.sleep(0.1)
    doomed = enqueue(store, basic.holds, str(tmp_path / "never"))
    wait_until(store, doomed.id, lambda t: t.status is Status.RUNNING)
    gate.touch()
    for task in live:
        done = wait_until(store, task.id, finished)
        assert (done.status, done.attempts) == (Status.DONE, 1)
    killed = time.monotonic()
    held.process.kill()
    wait_until(store, doomed.id, lambda t: t.status is Status.PENDING, timeout=LEASE + 5)
    assert time.monotonic() - killed <= LEASE + 2.0
    moved_back = [
        e
        for e in store.event_list(limit=10_000)
        if e.from_status is Status.RUNNING and e.to_status is not Status.DONE
    ]
    assert [e.task_id for e in moved_back] == [doomed.id]


def assert_clock_moved(process: WorkerProcess, line: str, skew: str) -> None:
    """The wall time ``process`` logged ``line`` at is ``skew`` ("+2h") off ours."""
    logged = datetime.strptime(process.wait_for_log(line)[:23], "%Y-%m-%d %H:%M:%S,%f")
    hours = int(skew.removesuffix("h"))
    offset = (logged - datetime.now()).total_seconds() - hours * 3600
    assert abs(offset) < 60, f"{line!r} logged at {logged}, not {skew} from now"


def _journal(path: Path) -> list[tuple[str, float, float]]:
    rows = []
    for line in path.read_text().splitlines():
        owner, start, end = line.split()
        rows.append((owner, float(start), float(end)))
    return rows


def _last_beat(journal: Path, owner: str) -> float:
    """When the probe ``owner`` last ended a cycle (0 if never): the last complete
    line of its beat file."""
    beats = Path(f"{journal}.{owner}.beat")
    lines = beats.read_text().split("\n")[:-1] if beats.exists() else []
    return float(lines[-1]) if lines else 0.0


def test_two_schedulers_never_run_a_cycle_at_the_same_time(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    journal = tmp_path / "cycles"
    journal.touch()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    probes = {
        owner: subprocess.Popen(
            [sys.executable, "-m", "tests.apps.scheduler_probe", store_url, owner, str(journal)],
            cwd=ROOT,
            env=env,
        )
        for owner in ("s1", "s2", "s3")
    }
    try:

        def leader_after(moment: float, excluded: set[str]) -> str:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                rows = [r for r in _journal(journal) if r[1] > moment and r[0] not in excluded]
                if len(rows) >= 5:
                    return rows[-1][0]
                time.sleep(0.05)
            raise AssertionError("no leader cycles")

        first = leader_after(0, set())
        probes[first].kill()  # SIGKILL the leader
        killed = time.monotonic()
        second = leader_after(killed, {first})
        # The first cycle led by anyone else (on a starved machine the leadership
        # may have passed between the two survivors before ``second`` held it).
        failover = min(r[1] for r in _journal(journal) if r[0] != first and r[1] > killed) - killed
        # pause the new leader right after one of its cycles ends, for three leases
        before = len(_journal(journal))
        while len(_journal(journal)) == before:
            time.sleep(0.005)
        probes[second].send_signal(signal.SIGSTOP)
        paused = time.monotonic()
        third = leader_after(paused, {first, second})
        probes[second].send_signal(signal.SIGCONT)
        resumed = time.monotonic()
        # Let the resumed ex-leader end a whole cycle (the one it was paused in,
        # or its next): were it to act as leader still, it would journal it...
        wait_for(lambda: _last_beat(journal, second) > resumed, f"a cycle of {second}")
        # ... and the new leader one more cycle beside it.
        ended = _last_beat(journal, second)
        wait_for(
            lambda: any(r[0] == third and r[1] > ended for r in _journal(journal)),
            f"a cycle of {third} after {second} resumed",
        )
    finally:
        for probe in probes.values():
            if probe.poll() is None:
                probe.terminate()
            probe.wait(10)
    cycles = sorted(_journal(journal), key=lambda r: r[1])
    for (owner_a, _, end_a), (owner_b, start_b, _) in itertools.pairwise(cycles):
        if owner_a != owner_b:
            assert start_b >= end_a, f"{owner_b} began a cycle while {owner_a} was in one"
    # leader lease 1 s and a cycle (0.05 s), with a margin for a loaded machine
    assert failover <= 1.0 + 2.0
    assert third != second
    assert not any(r[0] == second and paused < r[1] < paused + 1.0 for r in cycles)


def test_cron_every_second_with_three_schedulers_racing_runs_each_tick_once(
    store: Store, store_url: str, processes: list[WorkerProcess]
) -> None:
    racers = [
        WorkerProcess(
            store_url,
            "--interval",
            "0.1",
            "--leader-lease",
            "1",
            app="tests.apps.periodic:app",
            command="scheduler",
            ready="standing by",
        )
        for _ in range(3)
    ]
    processes.extend(racers)
    ticks = TaskFilter(topic="ticks")

    def wait_for_ticks(count: int) -> None:
        deadline = time.monotonic() + 30
        while store.task_count(ticks) < count:
            assert time.monotonic() < deadline, f"fewer than {count} ticks enqueued"
            time.sleep(0.05)

    wait_for_ticks(4)
    # The leader logs its election before it enqueues, but the test reads the
    # log in a thread of its own, which may not have caught up yet.
    wait_for(lambda: any("elected" in line for r in racers for line in r.lines), "an election")
    leader = next(r for r in racers if any("elected" in line for line in r.lines))
    leader.process.kill()  # a failover in the middle
    # The first leader enqueued the ticks of its lookback (a minute) at once:
    # wait for ticks that only the next leader can have enqueued.
    wait_for_ticks(max(11, store.task_count(ticks) + 3))
    for racer in racers:
        racer.stop()
    # One task per tick by construction (a tick's id is its time); what can go
    # wrong is a tick lost in the failover, or enqueued for the wrong second.
    ids = [t.id for t in store.task_list(ticks, limit=1000).tasks]
    seconds = sorted(datetime.fromisoformat(i.split(":", 2)[2]).timestamp() for i in ids)
    assert len(seconds) >= 11
    gaps = [b - a for a, b in itertools.pairwise(seconds)]
    assert gaps == [1.0] * len(gaps), f"ticks missing or repeated: {gaps}"
