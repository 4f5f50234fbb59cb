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
    timeout. Abandoning an execution kills its child; a fresh one replaces it for
    the next task. A child that dies by itself (a crash, ``os._exit``) fails the
    attempt.
    """

    def __init__(self, app_path: str, slots: int) -> None:
        self._ctx = multiprocessing.get_context("spawn")
        self._app_path = app_path
        self._free: queue.Queue[_Child] = queue.Queue()
        for _ in range(slots):
            child = _Child(self._ctx, app_path)
            child.spawn()
            self._free.put(child)
        self._running: dict[str, _Child] = {}
        self._lock = threading.Lock()

    def submit(self, task: Task, lease: Lease, deliver: Deliver, claim: Claim) -> None:
        def run() -> None:
            child = self._free.get()
            child.warm()
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
        while not self._free.empty():
            self._free.get_nowait().stop()
        with self._lock:
            for child in self._running.values():
                child.kill()


class _Child:
    """One child process and the pipe to it; restarted lazily after a kill."""

    def __init__(self, ctx: multiprocessing.context.SpawnContext, app_path: str) -> None:
        self._ctx = ctx
        self._app_path = app_path
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._ready = False  # the child said it imported the App
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

    def _ensure_ready(self) -> Connection:
        conn = self.spawn()
        if not self._ready:
            conn.recv()  # READY, once the App is imported; EOFError if it died trying
            self._ready = True
        return conn

    def warm(self) -> None:
        """Wait until the child is ready for a task. A child that died importing
        is left for :meth:`run` to report, as the failure of the task it gets."""
        with contextlib.suppress(EOFError, OSError):
            self._ensure_ready()

    def run(self, task: Task, lease: Lease) -> Ending | None:
        """The ending, or ``None`` if the execution was abandoned (killed)."""
        self._killed = False
        try:
            conn = self._ensure_ready()
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

    def stop(self) -> None:
        if self._conn is not None and self._process is not None and self._process.is_alive():
            with contextlib.suppress(OSError):
                self._conn.send(None)
            self._process.join(5)
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
