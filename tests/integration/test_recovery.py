"""Workers die and clocks lie: recovery with real processes on each store.

SIGKILL and SIGSTOP a worker mid-task, skew wall clocks by hours under
libfaketime, kill the elected scheduler, and race three schedulers on a cron
task. Leases are 2 s and scheduler cycles short, so the bound on recovery is
about lease + cycle.
"""

from __future__ import annotations

import itertools
import math
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from tenure import Event, Status, Store
from tenure.store import TaskFilter
from tests.apps import basic
from tests.integration.workers import (
    FAKETIME_LIB,
    ROOT,
    WorkerProcess,
    enqueue,
    finished,
    skewed,
    wait_for,
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
    zombie.wait_for_log("abandoning the execution", "lost its lease")
    assert store.task_get(task.id) == done
    assert zombie.process.poll() is None  # the zombie lives on, harmless


@pytest.mark.skipif(
    not FAKETIME_LIB.exists() and os.environ.get("CI") != "true",
    reason="libfaketime is not installed (apt-get install faketime)",
)
# Each store in one direction (the chaos suite's clock-skew scenario runs both).
@pytest.mark.parametrize(
    ("backend", "worker_skew", "scheduler_skew"),
    [("sqlite", "+2h", "-2h"), ("postgres", "-2h", "+2h")],
    indirect=["backend"],
)
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


Row = tuple[str, str, str, float]  # a probe's journal line: owner, kind, argument, time


def _journal(path: Path) -> list[Row]:
    """The probes' journal so far (a line still being written is left out)."""
    text = path.read_text()
    rows = []
    for line in text[: text.rfind("\n") + 1].splitlines():
        owner, kind, argument, at = line.split()
        rows.append((owner, kind, argument, float(at)))
    return rows


def _steps(rows: list[Row], dead: dict[str, float]) -> list[tuple[str, float, float]]:
    """Every step a probe ran as leader, as (owner, start, end). A step begun and
    never ended (its probe was killed in it) lasts until ``dead[owner]``, a moment
    the probe was known to have ended by."""
    begun: dict[str, float] = {}
    steps = []
    for owner, kind, _, at in rows:
        if kind == "begin":
            assert owner not in begun, f"{owner} began a step inside another"
            begun[owner] = at
        elif kind == "end":
            steps.append((owner, begun.pop(owner), at))
    return steps + [(owner, start, dead[owner]) for owner, start in begun.items()]


def _stopped(pid: int) -> bool:
    """Whether the process is stopped by a signal (state T)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "T"


def test_two_schedulers_never_run_a_cycle_at_the_same_time(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    # Three probes (tests/apps/scheduler_probe.py) race for the leadership; each
    # journals every step the scheduler lets it run as leader, each step lasting
    # over 40 ms, cycles back to back. The leader is SIGKILLed; the next one is
    # SIGSTOPped at the worst moment (this cycle's extension just succeeded, its
    # step about to start) and SIGCONTed once the third has led for a while, past
    # its leader lease: the cycle it resumes in must run no step, being past its
    # own deadline. No step of one probe may overlap a step of another.
    lease = 1.0
    journal = tmp_path / "cycles"
    journal.touch()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    probes = {
        owner: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.apps.scheduler_probe",
                store_url,
                owner,
                str(journal),
                str(lease),
            ],
            cwd=ROOT,
            env=env,
        )
        for owner in ("s1", "s2", "s3")
    }
    dead: dict[str, float] = {}  # a moment each probe had ended by

    def leader_after(moment: float, excluded: set[str]) -> str:
        """The first probe outside ``excluded`` to lead three cycles after ``moment``
        (each has a periodic step)."""

        def leaders() -> list[str]:
            rows = _journal(journal)
            begun = [r[0] for r in rows if r[1:3] == ("begin", "periodic") and r[3] > moment]
            return [o for o in dict.fromkeys(begun) if o not in excluded and begun.count(o) >= 3]

        wait_for(lambda: bool(leaders()), f"a leader besides {sorted(excluded)}", timeout=20)
        return leaders()[0]

    def after_resume(owner: str) -> list[Row]:
        """What ``owner`` journaled after its resume line."""
        rows = [r for r in _journal(journal) if r[0] == owner]
        kinds = [r[1] for r in rows]
        return rows[kinds.index("resume") + 1 :] if "resume" in kinds else []

    try:
        first = leader_after(0.0, set())
        kill_sent = time.monotonic()
        probes[first].kill()
        probes[first].wait(10)
        dead[first] = time.monotonic()
        second = leader_after(kill_sent, {first})
        # The first step led by anyone else (on a starved machine the leadership
        # may have passed between the two survivors before ``second`` held it).
        failover = (
            min(r[3] for r in _journal(journal) if r[0] != first and r[3] > kill_sent) - kill_sent
        )
        Path(f"{journal}.{second}.pause").touch()  # it stops itself before its next step
        wait_for(lambda: _stopped(probes[second].pid), f"{second} to stop itself")
        paused = time.monotonic()
        [third] = set(probes) - {first, second}
        assert leader_after(paused, {first, second}) == third
        assert time.monotonic() - paused > lease
        probes[second].send_signal(signal.SIGCONT)
        # The ex-leader ends the cycle it was paused in and one more; the new leader
        # runs a step after that, beside it.
        wait_for(
            lambda: sum(r[1] == "cycle" for r in after_resume(second)) >= 2,
            f"two cycles of {second} after it resumed",
        )
        ended = [r for r in after_resume(second) if r[1] == "cycle"][1][3]
        wait_for(
            lambda: any(
                r[0] == third and r[1] == "end" and r[3] > ended for r in _journal(journal)
            ),
            f"a step of {third} after {second} resumed",
        )
    finally:
        for probe in probes.values():
            if probe.poll() is None:
                probe.send_signal(signal.SIGCONT)  # a stopped process cannot act on SIGTERM
                probe.terminate()
        for owner, probe in probes.items():
            try:
                probe.wait(10)
            except subprocess.TimeoutExpired:
                probe.kill()
                probe.wait(10)
            dead.setdefault(owner, time.monotonic())
    rows = _journal(journal)
    steps = _steps(rows, dead)
    overlaps = [
        (a, b)
        for a, b in itertools.combinations(steps, 2)
        if a[0] != b[0] and a[1] < b[2] and b[1] < a[2]
    ]
    assert not overlaps, f"steps of two probes at the same time: {overlaps[:5]}"
    assert {o for o, _, _ in steps} == {"s1", "s2", "s3"}
    # Resumed past its deadline, the ex-leader ran no step: the cycle it was paused
    # in skipped them all, and its next cycle found it replaced.
    resumed = [r[1:3] for r in after_resume(second) if r[1] in ("begin", "cycle")][:2]
    assert resumed == [("cycle", "1"), ("cycle", "0")], after_resume(second)[:6]
    # leader lease 1 s and a cycle (about 0.1 s), with a margin for a loaded machine
    assert failover <= lease + 2.0, f"failover took {failover:.2f}s"


def _tick_second(task_id: str) -> float:
    """The tick a periodic task was enqueued for (its id is ``periodic:NAME:ISO``)."""
    return datetime.fromisoformat(task_id.split(":", 2)[2]).timestamp()


# On PostgreSQL: the chaos suite's scheduler-election scenario runs on SQLite.
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_cron_every_second_with_three_schedulers_racing_runs_each_tick_once(
    store: Store, store_url: str, processes: list[WorkerProcess]
) -> None:
    # Three schedulers race on a cron task every second for over ten seconds of
    # wall time; the leader is SIGKILLed midway. From the first leader's election
    # to the end, every second has exactly one task, created once, not before its
    # second and late by no more than a failover. A leader lease of 2 s makes sure
    # the failover leaves ticks for the next leader to catch up on.
    leader_lease, interval = 2.0, 0.1
    started = store.clock_now()
    for _ in range(3):
        processes.append(
            WorkerProcess(
                store_url,
                "--interval",
                str(interval),
                "--leader-lease",
                str(leader_lease),
                app="tests.apps.periodic:app",
                command="scheduler",
                ready="standing by",
            )
        )
    racers = processes[:]

    def created() -> list[Event]:
        return [
            e
            for e in store.event_list(limit=10_000)
            if e.topic == "ticks" and e.from_status is None
        ]

    def has_tick(second: int) -> bool:
        return any(_tick_second(e.task_id) == second for e in created())

    wait_for(lambda: bool(created()), "the first leader's ticks")
    # Its first cycle comes just after its election and stores the schedule,
    # which starts then: no tick from before it is enqueued.
    elected = min(e.at for e in created()).timestamp()
    assert elected >= started.timestamp()
    midway, end = math.ceil(elected) + 5, math.ceil(elected) + 10
    wait_for(lambda: has_tick(midway), f"the tick of {midway - math.ceil(elected)} s in")
    state = store.leader_get("scheduler")
    assert state is not None and state.owner is not None
    [leader] = [r for r in racers if r.pid == int(state.owner.split(":")[1])]
    killed = store.clock_now().timestamp()
    leader.process.kill()  # a failover in the middle
    assert killed + leader_lease + 1 < end
    wait_for(lambda: has_tick(end), "the tick 10 s after the first election", timeout=30)
    assert any("elected" in line for r in racers if r is not leader for line in r.lines)
    assert store.clock_now().timestamp() - started.timestamp() >= 10
    for racer in racers:
        racer.stop()

    events = created()
    tasks = store.task_list(TaskFilter(topic="ticks"), limit=10_000).tasks
    assert len(events) == len(tasks)
    assert sorted(e.task_id for e in events) == sorted(t.id for t in tasks)
    seconds = [_tick_second(t.id) for t in tasks]
    window = range(math.ceil(elected), end + 1)
    per_second = {s: seconds.count(s) for s in window}
    assert per_second == dict.fromkeys(window, 1), f"ticks missing or repeated: {per_second}"
    # No tick is enqueued before its second, or later than a failover: a leader
    # lease and a couple of cycles after it, with a margin for a loaded machine.
    late = {
        _tick_second(e.task_id): e.at.timestamp() - _tick_second(e.task_id)
        for e in events
        if _tick_second(e.task_id) >= math.ceil(elected)
    }
    assert all(0 <= d <= leader_lease + 2 * interval + MARGIN for d in late.values()), late
    assert max(late.values()) >= 1.0, f"no tick fell in the failover: {late}"
    # A first start enqueues no tick from before it.
    assert min(seconds) > started.timestamp()
    assert all(s.is_integer() for s in seconds)
