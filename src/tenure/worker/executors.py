"""Where task bodies run: threads, an asyncio loop, or child processes.

The worker's control plane (reserving, keepalive, completing) is the same for
all three; an executor only starts an execution, reports its ending through
``deliver``, and abandons it on request: a child process is killed, an asyncio
task is cancelled, a thread cannot be stopped, so its ending is ignored (the
worker discards endings of executions it abandoned).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Protocol

from tenure.errors import ConfigError
from tenure.store.types import Lease
from tenure.task import Task, TaskError
from tenure.worker.runner import Ending, Raised, run_async, run_sync

if TYPE_CHECKING:
    from tenure.app import App

READY = "ready"
"""What a pool child sends once it has imported the App."""

START_LIMIT = 120.0
"""Seconds a pool child may take to import the App before it is taken for hung."""

CLOSE_GRACE = 5.0
"""Seconds idle pool children get to exit when the pool closes."""

Deliver = Callable[[str, Ending], None]
Claim = Callable[[str], bool]
"""Asked just before an execution begins; ``False`` means skip it (the task was
released or abandoned while it waited)."""


class Executor(Protocol):
    """Runs at most its number of slots at once; more may wait their turn."""

    def submit(self, task: Task, lease: Lease, deliver: Deliver, claim: Claim) -> None: ...

    def abandon(self, task_id: str) -> None: ...

    def close(self) -> None: ...


class ThreadExecutor:
    """A pool of long-lived threads, one execution at a time each.

    A thread cannot be stopped: an abandoned execution runs on, unheard (the
    worker discards its ending), and a new thread takes its place at once, so
    abandonment never shrinks the pool. Reusing threads spares each task the
    cost of starting one.
    """

    def __init__(self, app: App, slots: int) -> None:
        self.app = app
        self._jobs: queue.SimpleQueue[tuple[Task, Lease, Deliver, Claim]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running: dict[str, threading.Thread] = {}
        self._replaced: set[threading.Thread] = set()  # threads to end after their task
        for _ in range(slots):
            self._spawn()

    def _spawn(self) -> None:
        threading.Thread(target=self._work, name="tenure-task", daemon=True).start()

    def submit(self, task: Task, lease: Lease, deliver: Deliver, claim: Claim) -> None:
        self._jobs.put((task, lease, deliver, claim))

    def _work(self) -> None:
        me = threading.current_thread()
        while True:
            task, lease, deliver, claim = self._jobs.get()
            with self._lock:
                self._running[task.id] = me
            ending = run_sync(self.app, task, lease) if claim(task.id) else None
            with self._lock:
                self._running.pop(task.id, None)
                replaced = me in self._replaced
                self._replaced.discard(me)
            if ending is not None:
                deliver(task.id, ending)
            if replaced:  # abandoned: a new thread has taken this one's place
                return

    def abandon(self, task_id: str) -> None:
        """Let a running execution go on unheard, and give the pool a new thread.
        (One still waiting is skipped: its claim fails.)"""
        with self._lock:
            thread = self._running.pop(task_id, None)
            if thread is None:
                return
            self._replaced.add(thread)
        self._spawn()

    def close(self) -> None:
        """Threads are daemons; nothing to wait for."""


class AsyncExecutor:
    """One event loop in its own thread; every execution is an asyncio task."""

    def __init__(self, app: App, slots: int) -> None:
        self.app = app
        self._slots = asyncio.Semaphore(slots)
        self._loop = asyncio.new_event_loop()
        self._running: dict[str, Future[Ending | None]] = {}
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="tenure-async", daemon=True
        )
        self._thread.start()

    def submit(self, task: Task, lease: Lease, deliver: Deliver, claim: Claim) -> None:
        future = asyncio.run_coroutine_threadsafe(self._run(task, lease, claim), self._loop)
        with self._lock:
            self._running[task.id] = future

        def done(finished: Future[Ending | None]) -> None:
            with self._lock:
                self._running.pop(task.id, None)
            if not finished.cancelled() and (ending := finished.result()) is not None:
                deliver(task.id, ending)

        future.add_done_callback(done)

    async def _run(self, task: Task, lease: Lease, claim: Claim) -> Ending | None:
        async with self._slots:
            if not claim(task.id):
                return None
            return await run_async(self.app, task, lease)

    def abandon(self, task_id: str) -> None:
        with self._lock:
            future = self._running.pop(task_id, None)
        if future is not None:
            future.cancel()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


class ProcessExecutor:
    """A fixed set of spawned child processes, one execution at a time each.

    Children import the App from its ``module:attribute`` path, so task code
    need not be picklable and nothing depends on fork. They start with the
    executor, importing side by side, and a task is claimed (its timeout starts)
    only once its child is ready: an import of seconds never eats into a task's
    timeout. A child not ready within ``start_limit`` seconds (an import that
    hangs) is killed and the attempt fails, as when a child dies importing.
    Abandoning an execution kills its child; a fresh one replaces it for the
    next task. A child that dies by itself (a crash, ``os._exit``) fails the
    attempt.
    """

    def __init__(self, app_path: str, slots: int, start_limit: float = START_LIMIT) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._start_limit = start_limit
        self._children = [_Child(ctx, app_path) for _ in range(slots)]
        self._free: queue.Queue[_Child] = queue.Queue()
        for child in self._children:
            child.spawn()
            self._free.put(child)
        self._running: dict[str, _Child] = {}
        self._lock = threading.Lock()

    def submit(self, task: Task, lease: Lease, deliver: Deliver, claim: Claim) -> None:
        def run() -> None:
            child = self._free.get()
            child.warm(self._start_limit)
            if not claim(task.id):
                self._free.put(child)
                return
            with self._lock:
                self._running[task.id] = child
            ending = child.run(task, lease)
            with self._lock:
                self._running.pop(task.id, None)
            self._free.put(child)
            if ending is not None:
                deliver(task.id, ending)

        threading.Thread(target=run, name=f"tenure-proc-{task.id}", daemon=True).start()

    def abandon(self, task_id: str) -> None:
        with self._lock:
            child = self._running.get(task_id)
        if child is not None:
            child.kill()

    def close(self) -> None:
        """Kill the children that run a task; ask the others to exit, and kill
        those still there after a few seconds (one deadline for all)."""
        with self._lock:
            running = set(self._running.values())
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

    def spawn(self) -> Connection:
        """Start the process unless it runs; it imports the App meanwhile."""
        if self._process is None or not self._process.is_alive() or self._conn is None:
            parent, child = self._ctx.Pipe()
            self._process = self._ctx.Process(
                target=child_main, args=(self._app_path, child), daemon=True
            )
            self._process.start()
            child.close()
            self._conn, self._ready = parent, False
        return self._conn

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

    def run(self, task: Task, lease: Lease) -> Ending | None:
        """The ending, or ``None`` if the execution was abandoned (killed).
        Call :meth:`warm` first."""
        if self._start_failure is not None:
            return Raised(self._start_failure)
        conn = self._conn
        if conn is None or not self._ready:
            raise RuntimeError("run() before a successful warm()")
        self._killed = False
        try:
            conn.send((task, lease))
            ending: Ending = conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            if self._killed:
                return None
            code = None if self._process is None else self._process.exitcode
            self._process = None
            return Raised(TaskError("WorkerCrashed", f"the child process died (exit code {code})"))
        return ending

    def kill(self) -> None:
        self._killed = True
        if self._process is not None and self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        self._process = None

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


def child_main(app_path: str, conn: Connection) -> None:
    """The loop of a pool child: receive a task, run it, send its ending back."""
    from tenure.loading import load_app  # noqa: PLC0415 - runs in a fresh interpreter

    app = load_app(app_path)
    conn.send(READY)
    while True:
        message = conn.recv()
        if message is None:
            return
        task, lease = message
        conn.send(run_sync(app, task, lease))


def make_executor(pool: str, app: App, concurrency: int) -> Executor:
    """The executor for ``pool``: threads, async or processes."""
    if pool == "threads":
        return ThreadExecutor(app, concurrency)
    if pool == "async":
        return AsyncExecutor(app, concurrency)
    if pool == "processes":
        if app.import_path is None:
            raise ConfigError(
                "the process pool needs the App's import path: run `tenure worker --app "
                "module:app`, or set app.import_path = 'module:app'"
            )
        return ProcessExecutor(app.import_path, concurrency)
    raise ConfigError(f"pool must be threads, async or processes, not {pool!r}")
