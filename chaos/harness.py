"""The harness: runs a scenario's processes, injects its faults, writes them down.

It starts real ``tenure worker`` processes (``--no-scheduler``), ``tenure
scheduler`` processes (one, so the supervisor's cycle is the same for every
fault, or several candidates for the election scenario) and the producers,
each in the checkout's root with the journals' folder in its environment. A
monitor thread restarts every worker or scheduler that exits: the ones it
killed, as a deployment's supervisor would, and the first few others (each such
exit is written down: the checker calls it a violation).

Every fault goes to the harness's own journal, the fault log, before the signal
is sent: ``kill``, ``stop`` and ``cont`` with the pid, the CLOCK_MONOTONIC time
(as the probes' records) and, read just before, the store's clock (as its event
log), so the checker measures each interval on one clock. ``spawn`` and
``exit`` give each pid's lifetime; ``server-down``/``server-up`` a restart of
the server; ``drained`` the end.

While the scenario runs, the harness follows the probes' journals, so it can
pick a worker that is in the middle of a task (:meth:`Harness.holders`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from chaos import ROOT, ChaosError
from chaos.journal import FOLDER_VARIABLE, Journal, Record, Tail, monotonic
from chaos.producers import Workload
from tenure.errors import TenureError
from tenure.store import Store, TaskFilter
from tenure.task import Status

APP = "chaos.probe:app"
GRACE = 5.0
"""Seconds a worker gets to finish at the end (the drain left it nothing to do)."""
MONITOR_TICK = 0.05
CRASH_RESTARTS = 3
"""Processes that exit by themselves are started again this many times in all:
a build that cannot start a worker must not spin."""
FINISHED = (Status.DONE, Status.FAILED, Status.CANCELLED)


@dataclass(frozen=True, slots=True, kw_only=True)
class Processes:
    """How a scenario's processes run: ``workers`` workers of ``concurrency``
    slots, leases of ``lease`` seconds, the scheduler's cycle every ``cycle``
    seconds, workers looking for work every ``poll`` seconds when idle;
    ``pool``, where the workers run task bodies (``processes``: a child
    process each, which a task may kill); ``schedulers``, how many scheduler
    candidates stand, with leader leases of ``leader_lease`` seconds.

    The one place these numbers are written: a scenario's plan is made of
    them, the harness starts its processes by them, and the checker's time
    bounds derive from them."""

    workers: int = 4
    concurrency: int = 4
    lease: float = 2.0
    cycle: float = 0.5
    poll: float = 0.1
    pool: str = "threads"
    schedulers: int = 1
    leader_lease: float = 10.0
    followers: int = 0
    """Event followers (:mod:`chaos.follower`) started beside the workers."""


@dataclass(frozen=True, slots=True)
class Setup:
    """Where and how a scenario's processes run: on the store at ``url``, with
    their journals and logs in ``folder``, as ``processes`` says. ``app`` is
    the App the workers load (the probe's, or a broken build); ``env``, more
    environment for every process."""

    url: str
    folder: Path
    processes: Processes = Processes()
    app: str = APP
    env: tuple[tuple[str, str], ...] = ()

    @property
    def journals(self) -> Path:
        return self.folder / "journals"

    @property
    def logs(self) -> Path:
        return self.folder / "logs"


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one process runs: more environment (``env``) and a command its argv
    goes after (``prefix``, e.g. ``ip netns exec NAME``, which must exec it so
    the pid and the signals are the process's own). A process the monitor
    starts again keeps its predecessor's placement."""

    env: tuple[tuple[str, str], ...] = ()
    prefix: tuple[str, ...] = ()


@dataclass(slots=True)
class Child:
    """A process the harness started; ``faulted`` once the harness killed it."""

    role: str
    process: subprocess.Popen[bytes]
    log: Path
    faulted: bool = False
    paused: bool = False
    reaped: bool = False
    placement: Placement = Placement()


@dataclass(slots=True)
class InFlight:
    """Executions whose ``start`` was seen and neither ``end`` nor ``abandon``."""

    by_pid: dict[int, dict[tuple[str, int], tuple[float, float]]] = field(default_factory=dict)
    """pid → (task, token) → (its start, the task's duration)."""
    last_start: dict[int, float] = field(default_factory=dict)
    """pid → the time of its latest start."""

    def follow(self, records: Iterable[Record]) -> None:
        for record in records:
            pid, task, token = record.get("pid"), record.get("task"), record.get("token")
            if not isinstance(pid, int) or not isinstance(task, str) or not isinstance(token, int):
                continue
            held = self.by_pid.setdefault(pid, {})
            if record["k"] == "start":
                self.last_start[pid] = record["mono"]
                held[(task, token)] = (record["mono"], float(record.get("duration") or 0))
            elif record["k"] in ("end", "abandon"):
                held.pop((task, token), None)


class Harness:
    """``with Harness(setup, store) as harness:`` the scenario's processes run."""

    def __init__(self, setup: Setup, store: Store) -> None:
        self.setup = setup
        self.store = store
        setup.journals.mkdir(parents=True, exist_ok=True)
        setup.logs.mkdir(parents=True, exist_ok=True)
        self.faults = Journal(setup.journals / "harness-faults.jsonl")
        self._lock = threading.RLock()
        self._children: list[Child] = []
        self._crashes = 0
        self._last_crash = ""
        self._tail = Tail(setup.journals, prefix="probe-")
        self._in_flight = InFlight()
        self._stop = threading.Event()
        self._monitor = threading.Thread(target=self._watch, name="chaos-monitor", daemon=True)

    # -- starting and stopping -------------------------------------------------------

    def __enter__(self) -> Harness:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def start(self, ready_timeout: float = 60.0) -> None:
        """The scheduler and the workers, once each is registered in the store."""
        every = self.setup.processes
        for _ in range(every.schedulers):
            self._spawn("scheduler")
        for _ in range(every.workers):
            self._spawn("worker")
        for _ in range(every.followers):
            self._spawn("follower")
        self._monitor.start()
        self.wait_for(
            lambda: self._registered(set(self.workers())), "every worker registered", ready_timeout
        )
        self.wait_for(self._scheduler_leads, "the scheduler elected", 30)

    def _argv(self, role: str) -> list[str]:
        s, p = self.setup, self.setup.processes
        tenure = [sys.executable, "-m", "tenure", role, "--app", s.app, "--url", s.url]
        tenure += ["--log-level", "WARNING"]
        if role == "follower":
            return [sys.executable, "-m", "chaos.follower", s.url]
        if role == "scheduler":
            return [*tenure, f"--interval={p.cycle}", f"--leader-lease={p.leader_lease}"]
        options = {"--lease": p.lease, "--poll": p.poll, "--concurrency": p.concurrency}
        options["--grace"] = GRACE
        given = [f"{k}={v}" for k, v in options.items()]
        return [*tenure, "--no-scheduler", f"--pool={p.pool}", *given]

    def spawn(self, role: str, placement: Placement) -> int:
        """Start one more process of ``role`` (worker, scheduler) at ``placement``; its pid."""
        return self._spawn(role, placement=placement).process.pid

    def _spawn(
        self, role: str, argv: list[str] | None = None, placement: Placement = Placement()
    ) -> Child:
        env = {**os.environ, **dict(self.setup.env), **dict(placement.env)}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        env[FOLDER_VARIABLE] = str(self.setup.journals)
        with self._lock:
            path = self.setup.logs / f"{role}-{len(self._children)}.log"
            with path.open("wb") as stderr:
                # The argv is this interpreter with the scenario's own options.
                # A session of its own: a Ctrl-C meant for the harness reaches
                # it alone, and it stops its processes itself.
                process = subprocess.Popen(  # noqa: S603
                    [*placement.prefix, *(argv or self._argv(role))],
                    cwd=ROOT,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=stderr,
                    stderr=stderr,
                    start_new_session=True,
                )
            child = Child(role, process, path, placement=placement)
            self._children.append(child)
            self.faults.write("spawn", role=role, pid=process.pid)
        return child

    def produce(self, workloads: Iterable[Workload]) -> list[Child]:
        """Start one producer process per workload."""
        return [
            self._spawn(
                "producer",
                [sys.executable, "-m", "chaos.producers", self.setup.url, workload.to_json()],
            )
            for workload in workloads
        ]

    def close(self) -> None:
        """Stop every process: SIGCONT the paused, SIGTERM all, SIGKILL the late."""
        self._stop.set()
        if self._monitor.is_alive():
            self._monitor.join()
        with self._lock:
            alive = [c for c in self._children if c.process.poll() is None]
            for child in alive:
                if child.paused:
                    child.process.send_signal(signal.SIGCONT)
                child.process.send_signal(signal.SIGTERM)
            for child in alive:
                try:
                    child.process.wait(GRACE + 10)
                except subprocess.TimeoutExpired:
                    child.process.kill()
                    child.process.wait()
        self.faults.close()

    # -- watching --------------------------------------------------------------------

    def _watch(self) -> None:
        """Restart every worker and scheduler that exits; write down the exits
        the harness did not cause (and restart only the first few of those)."""
        while not self._stop.wait(MONITOR_TICK):
            with self._lock:
                for child in list(self._children):
                    code = child.process.poll()
                    if code is None or child.role == "producer" or child.reaped:
                        continue
                    child.reaped = True
                    if not child.faulted:
                        tail = child.log.read_text(errors="replace")[-1500:]
                        self.faults.write(
                            "exit", role=child.role, pid=child.process.pid, code=code, log=tail
                        )
                        self._crashes += 1
                        self._last_crash = f"{child.role} exited ({code}): {tail.strip()}"
                    if child.faulted or self._crashes <= CRASH_RESTARTS:
                        self._spawn(child.role, placement=child.placement)
                self._in_flight.follow(self._tail.read())

    def workers(self) -> list[int]:
        """The pids of the workers alive and not paused now."""
        with self._lock:
            return [
                c.process.pid
                for c in self._children
                if c.role == "worker"
                and c.process.poll() is None
                and not c.faulted
                and not c.paused
            ]

    def alive(self, role: str) -> list[int]:
        """The pids of the processes of ``role`` alive and not paused now."""
        with self._lock:
            return [
                c.process.pid
                for c in self._children
                if c.role == role and c.process.poll() is None and not c.faulted and not c.paused
            ]

    def holders(self, *, left: float = 0.0) -> list[int]:
        """Live, unpaused workers in the middle of an execution that has at
        least ``left`` seconds still to run (by the duration its task was given)."""
        with self._lock:
            self._in_flight.follow(self._tail.read())
            busy, now = self._in_flight.by_pid, monotonic()
            return [
                pid
                for pid in self.workers()
                if any(begun + took - now >= left for begun, took in busy.get(pid, {}).values())
            ]

    def started_since(self, moment: float) -> set[int]:
        """The pids whose probes started an execution at or after ``moment``."""
        with self._lock:
            self._in_flight.follow(self._tail.read())
            return {pid for pid, last in self._in_flight.last_start.items() if last >= moment}

    def producers_done(self) -> bool:
        with self._lock:
            return all(c.process.poll() is not None for c in self._children if c.role == "producer")

    # -- faults -----------------------------------------------------------------------

    def kill(self, pid: int, *, stamp: bool = True) -> None:
        """SIGKILL a worker (the monitor starts another in its place). ``stamp``
        False writes no store time (where the store's times are not one clock)."""
        child = self._child(pid)
        with self._lock:
            child.faulted = True
            self.faults.write("kill", pid=pid, store_at=self.store_time() if stamp else None)
            os.kill(pid, signal.SIGKILL)

    def pause(self, pid: int) -> None:
        """SIGSTOP a worker: a zombie, alive but silent, until :meth:`resume`."""
        child = self._child(pid)
        with self._lock:
            child.paused = True
            self.faults.write("stop", pid=pid, store_at=self.store_time())
            os.kill(pid, signal.SIGSTOP)

    def resume(self, pid: int) -> None:
        child = self._child(pid)
        with self._lock:
            self.faults.write("cont", pid=pid, store_at=self.store_time())
            os.kill(pid, signal.SIGCONT)
            child.paused = False

    def _child(self, pid: int) -> Child:
        with self._lock:
            for child in self._children:
                if child.process.pid == pid and child.process.poll() is None:
                    return child
        raise ChaosError(f"no running process {pid} of this harness")

    # -- the store ----------------------------------------------------------------------

    def store_time(self) -> float | None:
        """The store's clock now, in seconds since the epoch (None if unreachable)."""
        try:
            return self.store.clock_now().timestamp()
        except TenureError:
            return None

    def unfinished(self) -> int | None:
        """Tasks pending, running or snoozed (None if the store is unreachable).

        Counted as all tasks less the finished ones, these read first: a task
        moves between the unfinished statuses (running, then pending again for
        a retry) between two counts and would be missed, but finished counts
        only grow, so reading them first never counts too few unfinished."""
        try:
            finished = sum(self.store.task_count(TaskFilter(status=s)) for s in FINISHED)
            return self.store.task_count() - finished
        except TenureError:
            return None

    def _registered(self, pids: set[int]) -> bool:
        if self._crashes > CRASH_RESTARTS:
            raise ChaosError(f"processes exit as they start; the last {self._last_crash}")
        try:
            return pids <= {info.pid for info in self.store.worker_list()}
        except TenureError:
            return False

    def _scheduler_leads(self) -> bool:
        return self.leader() is not None

    def leader(self) -> int | None:
        """The pid of the elected scheduler, if it is one of this harness's live
        ones (None: none is, or the store is unreachable)."""
        try:
            state = self.store.leader_get("scheduler")
        except TenureError:
            return None
        owner = (state.owner if state is not None else None) or ""
        with self._lock:
            schedulers = [c.process for c in self._children if c.role == "scheduler"]
        return next((p.pid for p in schedulers if p.poll() is None and f":{p.pid}:" in owner), None)

    def retire(self, role: str) -> None:
        """Stop every process of ``role`` for good (SIGTERM, SIGCONT if paused,
        and wait): the monitor starts none in their place."""
        with self._lock:
            leaving = [c for c in self._children if c.role == role and c.process.poll() is None]
            for child in leaving:
                child.faulted = child.reaped = True
                self.faults.write("retire", role=role, pid=child.process.pid)
                child.process.send_signal(signal.SIGTERM)
                if child.paused:
                    child.process.send_signal(signal.SIGCONT)
        for child in leaving:
            try:
                child.process.wait(GRACE + 10)
            except subprocess.TimeoutExpired:
                child.process.kill()
                child.process.wait()

    def settle(self, timeout: float) -> None:
        """Wait until the producers have exited and no task is unfinished (a
        phase of a scenario is over); ChaosError after ``timeout``."""
        self.wait_for(
            lambda: self.producers_done() and self.unfinished() == 0, "the phase drained", timeout
        )

    def drain(self, timeout: float) -> bool:
        """Wait until the producers have exited and no task is unfinished, or
        ``timeout`` passes; write ``drained`` and say whether it drained."""
        deadline = monotonic() + timeout

        def empty() -> bool:
            return self.producers_done() and self.unfinished() == 0

        drained = self.wait_for(
            empty, "the queue drained", timeout=deadline - monotonic(), fail=False
        )
        with self._lock:
            for child in self._children:
                if child.role == "producer":
                    code = child.process.poll()
                    self.faults.write("producer-exit", pid=child.process.pid, code=code)
        self.faults.write("drained", ok=drained)
        return drained

    def wait_for(
        self, done: Callable[[], bool], what: str, timeout: float, *, fail: bool = True
    ) -> bool:
        """Check ``done`` every 50 ms until it holds (True) or ``timeout``
        passes (ChaosError naming ``what``, or False with ``fail=False``)."""
        deadline = monotonic() + timeout
        tick = threading.Event()
        while not done():
            if monotonic() > deadline:
                if fail:
                    raise ChaosError(f"gave up after {timeout:.0f}s waiting until {what}")
                return False
            tick.wait(0.05)
        return True
