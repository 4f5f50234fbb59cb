"""The process pool: task bodies in spawned child processes, one at a time each.

A child imports the App from its ``module:attribute`` path (nothing is pickled
but the task, and nothing depends on fork), runs what the pipe hands it, and
sends back its ending and, on the way, its progress. Abandoning an execution
(a cancel, a timeout, a lost lease) first asks the task to stop: the child gets
``SIGUSR1``, which sets ``tenure.current().cancelled`` as on the other pools,
so a task that checks it ends by itself and its child stays warm for the next;
a child still running it ``STOP_GRACE`` seconds later is killed (``SIGKILL``),
and a fresh one replaces it. Either way its ending is never written. A child
may also be replaced between two tasks, after so many tasks or past so much
resident memory (:class:`Recycle`), as Celery's ``max_tasks_per_child`` and
``max_memory_per_child`` do.
"""

from __future__ import annotations

import contextlib
import logging
import math
import multiprocessing
import os
import queue
import signal
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection

from tenure import checks as check
from tenure.control import Link
from tenure.errors import ConfigError, InvalidInput
from tenure.loading import load_registry
from tenure.task import Lease, Task, TaskError
from tenure.worker.loops import ThreadLoop
from tenure.worker.progress import RECORDED, Progress, Progressed
from tenure.worker.runner import Claim, Deliver, Ending, Raised, run_in_thread

log = logging.getLogger("tenure.worker")

READY = "ready"
"""What a pool child sends once it has imported the App."""

START_LIMIT = 120.0
"""Seconds a pool child may take to import the App before it is taken for hung."""

CLOSE_GRACE = 5.0
"""Seconds idle pool children get to exit when the pool closes."""

STOP_GRACE = 2.0
"""Seconds an abandoned task in a child gets to stop by itself, once told
(``tenure.current().cancelled``), before its child is killed."""

STOP_SIGNAL = signal.SIGUSR1
"""What tells a child that the task it runs was abandoned."""

PROC = "/proc"
"""Where Linux tells a process's resident memory (``/proc/<pid>/statm``)."""


@dataclass(frozen=True, slots=True)
class Recycle:
    """When a child is replaced by a fresh one, between two tasks: after
    ``tasks`` tasks, or once its resident memory reaches ``memory_mb``
    megabytes (a leak in task code, or a library's cache, goes with it).
    Either may be ``None``."""

    tasks: int | None = None
    memory_mb: float | None = None

    def due(self, served: int, pid: int | None) -> str | None:
        """Why a child that ran ``served`` tasks, as process ``pid``, is
        replaced now; ``None`` if it is not."""
        if self.tasks is not None and served >= self.tasks:
            return f"after {served} tasks"
        if self.memory_mb is not None and pid is not None:
            resident = resident_mb(pid)
            if resident is not None and resident >= self.memory_mb:
                return f"at {resident:.0f} MB resident"
        return None


def recycle_for(pool: str, tasks: int | None, memory_mb: float | None) -> Recycle | None:
    """The :class:`Recycle` a worker's options ask for; only the process pool
    has children to replace, and only Linux tells their resident memory."""
    if tasks is None and memory_mb is None:
        return None
    if pool != "processes":
        raise ConfigError("max_tasks_per_child and max_memory_per_child need pool='processes'")
    if memory_mb is not None and not os.path.isdir(f"{PROC}/self"):
        raise ConfigError("max_memory_per_child reads /proc, which this system does not have")
    if memory_mb is not None and not (
        isinstance(memory_mb, int | float)
        and not isinstance(memory_mb, bool)
        and 0 < memory_mb < math.inf
    ):
        raise InvalidInput("max_memory_per_child", f"must be megabytes, above 0; got {memory_mb}")
    checked = None if tasks is None else check.integer(tasks, "max_tasks_per_child", minimum=1)
    return Recycle(tasks=checked, memory_mb=memory_mb)


def resident_mb(pid: int) -> float | None:
    """Process ``pid``'s resident memory, in megabytes (``None`` once it is gone)."""
    try:
        with open(f"{PROC}/{pid}/statm") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 1_000_000


class ProcessExecutor:
    """A fixed set of spawned child processes, one execution at a time each.

    Children import the App from its ``module:attribute`` path, so task code
    need not be picklable and nothing depends on fork. They start with the
    executor, importing side by side, and a task is claimed (its timeout starts)
    only once its child is ready: an import of seconds never eats into a task's
    timeout. A child not ready within ``start_limit`` seconds (an import that
    hangs) is killed and the attempt fails, as when a child dies importing.
    Abandoning an execution tells its task to stop, and kills its child if it
    has not within ``stop_grace`` seconds; a fresh one replaces a killed child
    for the next task. A child that dies by itself (a crash, ``os._exit``)
    fails the attempt.
    """

    def __init__(
        self,
        app_path: str,
        slots: int,
        start_limit: float = START_LIMIT,
        progress: Progress | None = None,
        stop_grace: float = STOP_GRACE,
        *,
        recycle: Recycle | None = None,
    ) -> None:
        ctx = self._ctx = multiprocessing.get_context("spawn")
        self._app_path = app_path
        self._retire = 0  # children to end as they come back free (a shrink)
        self._recycle = recycle
        self._start_limit = start_limit
        self._stop_grace = stop_grace
        self._progress = progress
        self._children = [_Child(ctx, app_path) for _ in range(slots)]
        self._free: queue.Queue[_Child] = queue.Queue()
        for child in self._children:
            child.spawn()
            self._free.put(child)
        self._running: dict[str, _Child] = {}
        self._lock = threading.Lock()
        self._closing = False

    def submit(self, task: Task, lease: Lease, deliver: Deliver, claim: Claim) -> None:
        def run() -> None:
            child = self._free.get()
            child.warm(self._start_limit)
            if not claim(task.id):
                self._give_back(child)
                return
            with self._lock:
                self._running[task.id] = child
            ending = child.run(task, lease, self._progress)
            with self._lock:
                self._running.pop(task.id, None)
            if ending is not None:
                deliver(task.id, ending)
            if self._recycle is not None and not self._closing:
                child.recycle_if(self._recycle)  # after the ending: it waits on no exit
            self._give_back(child)

        threading.Thread(target=run, name=f"tenure-proc-{task.id}", daemon=True).start()

    def resize(self, slots: int) -> None:
        """Run ``slots`` executions at once: new children at once; fewer as
        children come back free (an idle one ends now)."""
        with self._lock:
            if self._closing:
                return
            change = slots - (len(self._children) - self._retire)
            kept = min(self._retire, max(change, 0))  # a surplus still here serves again
            self._retire -= kept if change > 0 else change
            added = [_Child(self._ctx, self._app_path) for _ in range(max(change - kept, 0))]
            self._children += added
        for child in added:
            child.spawn()
            self._free.put(child)
        for _ in range(self._retire):
            try:
                self._give_back(self._free.get_nowait())
            except queue.Empty:
                break

    def _give_back(self, child: _Child) -> None:
        """Make ``child`` free again, or end it if the pool is to shrink."""
        with self._lock:
            retire = self._retire > 0 and not self._closing
            if retire:
                self._retire -= 1
                self._children.remove(child)
        if not retire:
            self._free.put(child)
            return
        child.ask_to_exit()
        threading.Thread(target=child.join_or_kill, args=(CLOSE_GRACE,), daemon=True).start()

    def abandon(self, task_id: str) -> None:
        with self._lock:
            child = self._running.get(task_id)
        if child is not None:
            child.stop(task_id, self._stop_grace)

    def close(self) -> None:
        """Kill the children that run a task; ask the others to exit, and kill
        those still there after a few seconds (one deadline for all)."""
        with self._lock:
            running = set(self._running.values())
            self._closing = True
        for child in self._children:
            if child in running:
                child.kill()
            else:
                child.ask_to_exit()
        deadline = time.monotonic() + CLOSE_GRACE
        for child in self._children:
            child.join_or_kill(deadline - time.monotonic())


class _Child:
    """One child process and the pipe to it; restarted lazily after a kill."""

    def __init__(self, ctx: multiprocessing.context.SpawnContext, app_path: str) -> None:
        self._ctx = ctx
        self._app_path = app_path
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._ready = False  # the child said it imported the App
        self._start_failure: TaskError | None = None  # why the last warm() failed
        self._killed = False
        self._running: str | None = None  # the task it runs, while it runs one
        self._execution = 0  # counts the executions handed to it
        self._served = 0  # tasks run by its current process
        self._abandoned = False  # the current execution was asked to stop
        self._lock = threading.Lock()
        """Held while a kill detaches the process and its pipe: the child is never
        handed to the next task half-killed."""

    def spawn(self) -> Connection:
        """Start the process unless it runs; it imports the App meanwhile."""
        if self._process is None or not self._process.is_alive() or self._conn is None:
            parent, child = self._ctx.Pipe()
            self._process = self._ctx.Process(
                target=child_main, args=(self._app_path, child, os.getpid()), daemon=True
            )
            self._process.start()
            child.close()
            self._conn, self._ready, self._served = parent, False, 0
        return self._conn

    def recycle_if(self, recycle: Recycle) -> None:
        """Between two tasks: replace the process by a fresh one (which imports
        the App while the slot is idle) if ``recycle`` says it is due."""
        process = self._process
        why = recycle.due(self._served, None if process is None else process.pid)
        if why is None or process is None:
            return
        self.ask_to_exit()
        self.join_or_kill(CLOSE_GRACE)
        log.info("process-pool child %s replaced %s", process.pid, why)
        self.spawn()

    def warm(self, limit: float) -> None:
        """Wait until the child is ready for a task, at most ``limit`` seconds.
        A child that dies importing, or is not ready in time, is killed, and
        :meth:`run` fails the task it gets."""
        self._start_failure = None
        try:
            conn = self.spawn()
            if self._ready:
                return
            if not conn.poll(limit):
                self.kill()
                message = f"the child process did not import the App within {limit:g}s"
                self._start_failure = TaskError("WorkerStartTimeout", message)
                return
            conn.recv()  # READY
            self._ready = True
        except (EOFError, OSError):
            code = None if self._process is None else self._process.exitcode
            self.kill()
            message = f"the child process died importing the App (exit code {code})"
            self._start_failure = TaskError("WorkerCrashed", message)

    def run(self, task: Task, lease: Lease, progress: Progress | None = None) -> Ending | None:
        """The ending, or ``None`` if the execution was abandoned (killed); the
        task's progress, sent as it runs, is written on the way. Call
        :meth:`warm` first."""
        if self._start_failure is not None:
            return Raised(self._start_failure)
        conn = self._conn
        if conn is None or not self._ready:
            raise RuntimeError("run() before a successful warm()")
        with self._lock:
            self._killed, self._running, self._abandoned = False, task.id, False
            self._execution += 1
            self._served += 1
        try:
            conn.send((task, lease))
            while isinstance(message := conn.recv(), Progressed):
                if progress is not None:
                    progress(lease, message.fraction, message.note)
                conn.send(RECORDED)  # the child's progress() returns once it is written
            ending: Ending = message
        except (EOFError, OSError, BrokenPipeError):
            return self._lost()
        finally:
            with self._lock:
                self._running = None
        with self._lock:  # a task that stopped when told: abandoned all the same
            return None if self._abandoned else ending

    def _lost(self) -> Raised | None:
        """The pipe broke mid-task: ``None`` if a kill did it (the execution was
        abandoned), else the attempt fails with how the child died."""
        with self._lock:
            if self._killed:
                return None
            process, self._process, self._conn = self._process, None, None
            abandoned = self._abandoned
        code = None
        if process is not None:
            process.join(5)  # reaped, so that its exit code is known
            code = process.exitcode
        if abandoned:
            return None
        return Raised(TaskError("WorkerCrashed", f"the child process died (exit code {code})"))

    def stop(self, task_id: str, grace: float) -> None:
        """Tell the task the child runs to stop (only if it runs ``task_id``),
        and kill the child if that same execution still runs ``grace`` seconds
        later."""
        with self._lock:  # held while signalling: no next task is handed over meanwhile
            if self._running != task_id or self._abandoned or self._process is None:
                return
            self._abandoned = True
            execution, pid = self._execution, self._process.pid
            if pid is not None:
                with contextlib.suppress(OSError):  # it may have just died
                    os.kill(pid, STOP_SIGNAL)
        timer = threading.Timer(grace, self.kill, args=(execution,))
        timer.name, timer.daemon = f"tenure-proc-stop-{task_id}", True
        timer.start()

    def kill(self, execution: int | None = None) -> None:
        """Kill the process (only if it still runs ``execution``, when one is
        named: that execution may have ended, and the child gone on to the
        next). Its process and pipe are let go of before anything else, so
        the next :meth:`warm` starts a fresh one, never reusing this one."""
        with self._lock:
            if execution is not None and (self._running is None or self._execution != execution):
                return
            self._killed = True
            process, self._process = self._process, None
            # The pipe is left to the thread that may be reading it (closing it
            # under that read could hand its descriptor to another pipe).
            self._conn, self._ready = None, False
        if process is not None and process.is_alive():
            process.kill()
            process.join(5)

    def ask_to_exit(self) -> None:
        """Tell the child to exit once it is idle (after its import, if it is
        still importing)."""
        if self._conn is not None and self._process is not None and self._process.is_alive():
            with contextlib.suppress(OSError):
                self._conn.send(None)

    def join_or_kill(self, timeout: float) -> None:
        if self._process is not None:
            self._process.join(max(0.0, timeout))
        self.kill()


ORPHAN_CHECK = 0.5
"""Seconds between a child's looks at whether its worker is still alive."""


def _exit_with(parent: int) -> None:
    """End this child as soon as its worker is gone (killed with ``SIGKILL``,
    or by the OOM killer), whatever task it runs: the task's lease goes with
    the worker, another worker runs it again, and a child left running it
    would be a second execution nobody can stop. Linux's parent-death signal
    would follow the thread that started the child, not the worker, so the
    child looks for itself (a new parent is the sign)."""
    while True:
        time.sleep(ORPHAN_CHECK)
        if os.getppid() != parent:
            os._exit(1)


def child_main(app_path: str, conn: Connection, parent: int) -> None:
    """The loop of a pool child of the worker ``parent``: receive a task, run
    it, send its ending back; ``STOP_SIGNAL`` sets the running task's cancelled
    flag."""
    threading.Thread(target=_exit_with, args=(parent,), name="orphan-check", daemon=True).start()
    registry = load_registry(app_path)
    loop = ThreadLoop()  # for async def tasks; one that ignores its flag is killed
    current = [Link()]
    signal.signal(STOP_SIGNAL, lambda *_: current[0].stop.set())
    conn.send(READY)

    def report(fraction: float, note: str | None) -> None:
        conn.send(Progressed(fraction, note))
        conn.recv()  # RECORDED: written, as on the other pools, when this returns

    try:
        while (message := conn.recv()) is not None:
            task, lease = message
            current[0] = Link(report=report)
            ending = run_in_thread(registry, task, lease, loop, link=current[0])
            assert ending is not None  # nothing here cancels: only a kill abandons
            conn.send(ending)
    finally:
        loop.close()
