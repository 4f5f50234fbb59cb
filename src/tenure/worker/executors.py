"""Where task bodies run: threads, an asyncio loop, or child processes.

The worker's control plane (reserving, keepalive, completing) is the same for
all three; an executor only starts an execution, reports its ending through
``deliver``, and abandons it on request: a child process is killed, a coroutine
is cancelled (on the async pool's loop or on its pool thread's own), a sync
function in a thread cannot be stopped, so its ending is ignored (the worker
discards endings of executions it abandoned). Every pool runs ``async def``
tasks; only the async pool runs many of them at once on one thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from multiprocessing.connection import Connection
from typing import Protocol

from tenure.control import Link
from tenure.errors import ConfigError
from tenure.loading import load_registry
from tenure.registry import Registry
from tenure.task import Lease, Task, TaskError
from tenure.worker.loops import Cancellation, ThreadLoop
from tenure.worker.progress import RECORDED, Progress, Progressed, link_of
from tenure.worker.runner import (
    Ending,
    Raised,
    ending_of_exception,
    is_coroutine_task,
    run_async,
    run_in_thread,
)

READY = "ready"
"""What a pool child sends once it has imported the App."""

START_LIMIT = 120.0
"""Seconds a pool child may take to import the App before it is taken for hung."""

CLOSE_GRACE = 5.0
"""Seconds idle pool children get to exit when the pool closes."""

CANCEL_GRACE = 1.0
"""Seconds a cancelled coroutine on the thread pool gets to end before its thread
is given up for stuck (it blocks its loop, or ignores the cancellation) and a
new thread takes its place."""

Deliver = Callable[[str, Ending], None]
Claim = Callable[[str], bool]
"""Asked just before an execution begins; ``False`` means skip it (the task was
released or abandoned while it waited)."""
Job = tuple[Task, Lease, Deliver, Claim]


class Executor(Protocol):
    """Runs at most its number of slots at once; more may wait their turn."""

    def submit(self, task: Task, lease: Lease, deliver: Deliver, claim: Claim) -> None: ...

    def abandon(self, task_id: str) -> None: ...

    def close(self) -> None: ...


class ThreadExecutor:
    """A pool of long-lived threads, one execution at a time each.

    A sync function cannot be stopped: an abandoned execution runs on, unheard
    (the worker discards its ending), and a new thread takes its place at once,
    so abandonment never shrinks the pool. An ``async def`` function runs on its
    thread's own event loop (see ``loops``) and is cancelled when abandoned; its
    thread serves the next task once the coroutine has unwound, or is replaced
    like a stuck one if it has not within ``cancel_grace`` seconds. Reusing
    threads (and their loops) spares each task the cost of starting one.
    """

    def __init__(
        self,
        registry: Registry,
        slots: int,
        cancel_grace: float = CANCEL_GRACE,
        progress: Progress | None = None,
    ) -> None:
        self.registry = registry
        self._cancel_grace = cancel_grace
        self._progress = progress
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running: dict[str, tuple[threading.Thread, Cancellation | None]] = {}
        self._links: dict[str, Link] = {}  # what tenure.current().cancelled reads
        self._serving: set[threading.Thread] = set()  # threads that take new jobs
        self._replaced: set[threading.Thread] = set()  # threads to end after their task
        self._cancelling: dict[threading.Thread, Cancellation] = {}
        self._numbers = itertools.count(1)
        self._closed = False
        for _ in range(slots):
            self._spawn()

    def _spawn(self) -> None:
        with self._lock:
            if self._closed:
                return
            thread = threading.Thread(
                target=self._work, name=f"tenure-task-{next(self._numbers)}", daemon=True
            )
            self._serving.add(thread)
        thread.start()

    def submit(self, task: Task, lease: Lease, deliver: Deliver, claim: Claim) -> None:
        self._jobs.put((task, lease, deliver, claim))

    def _work(self) -> None:
        me = threading.current_thread()
        loop = ThreadLoop()
        try:
            while (job := self._jobs.get()) is not None:
                if not self._run_one(me, loop, job):
                    return
        finally:
            loop.close()

    def _run_one(self, me: threading.Thread, loop: ThreadLoop, job: Job) -> bool:
        """Run one job; ``False`` once this thread has been replaced and must end."""
        task, lease, deliver, claim = job
        cancellation = Cancellation() if is_coroutine_task(self.registry, task) else None
        link = link_of(lease, self._progress)
        with self._lock:
            self._running[task.id] = (me, cancellation)
            self._links[task.id] = link
        ending: Ending | None = None
        try:
            if claim(task.id):
                ending = run_in_thread(
                    self.registry, task, lease, loop, cancellation=cancellation, link=link
                )
        except BaseException as exc:  # e.g. SystemExit from a task's background coroutine
            ending = ending_of_exception(exc)
        with self._lock:
            if self._running.get(task.id, (None, None))[0] is me:
                del self._running[task.id]
            if self._links.get(task.id) is link:
                del self._links[task.id]
            self._cancelling.pop(me, None)
            replaced = me in self._replaced
            self._replaced.discard(me)
        if ending is not None:
            deliver(task.id, ending)
        return not replaced

    def abandon(self, task_id: str) -> None:
        """Cancel a running coroutine; let a running sync execution go on
        unheard, and give the pool a new thread. (One still waiting is skipped:
        its claim fails.)"""
        with self._lock:
            running = self._running.pop(task_id, None)
            link = self._links.pop(task_id, None)
            if link is not None:
                link.stop.set()  # a sync task that checks tenure.current().cancelled stops
            if running is None:
                return
            thread, cancellation = running
            if cancellation is None:
                self._replace(thread)
            else:
                cancellation.cancel()
                self._cancelling[thread] = cancellation
        if cancellation is None:
            self._spawn()
            return
        timer = threading.Timer(self._cancel_grace, self._replace_if_stuck, (thread, cancellation))
        timer.name, timer.daemon = f"{thread.name}-cancelled", True
        timer.start()

    def _replace(self, thread: threading.Thread) -> None:
        """Mark ``thread`` to end after its execution (hold the lock)."""
        self._replaced.add(thread)
        self._serving.discard(thread)

    def _replace_if_stuck(self, thread: threading.Thread, cancellation: Cancellation) -> None:
        """Give the pool a new thread if ``thread`` still runs its cancelled coroutine."""
        with self._lock:
            if self._cancelling.get(thread) is not cancellation:
                return  # it has ended, and the thread serves again
            del self._cancelling[thread]
            self._replace(thread)
        self._spawn()

    def close(self) -> None:
        """End the threads, closing their event loops: idle ones at once, one
        unwinding a cancelled coroutine once it has; wait for those at most the
        cancel grace. Threads left running an abandoned sync function, or stuck
        in a coroutine, end after it (they are daemons: nothing waits for them)."""
        with self._lock:
            self._closed = True
            threads = list(self._serving)
        for _ in threads:
            self._jobs.put(None)
        deadline = time.monotonic() + self._cancel_grace
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


class AsyncExecutor:
    """One event loop in its own thread; every execution is an asyncio task."""

    def __init__(self, registry: Registry, slots: int, progress: Progress | None = None) -> None:
        self.registry = registry
        self._progress = progress
        self._slots = asyncio.Semaphore(slots)
        self._loop = asyncio.new_event_loop()
        self._running: dict[str, tuple[Future[Ending | None], Link]] = {}
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="tenure-async", daemon=True
        )
        self._thread.start()

    def submit(self, task: Task, lease: Lease, deliver: Deliver, claim: Claim) -> None:
        link = link_of(lease, self._progress)
        future = asyncio.run_coroutine_threadsafe(self._run(task, lease, claim, link), self._loop)
        with self._lock:
            self._running[task.id] = (future, link)

        def done(finished: Future[Ending | None]) -> None:
            with self._lock:
                if self._running.get(task.id, (None, None))[0] is finished:
                    del self._running[task.id]
            if not finished.cancelled() and (ending := finished.result()) is not None:
                deliver(task.id, ending)

        future.add_done_callback(done)

    async def _run(self, task: Task, lease: Lease, claim: Claim, link: Link) -> Ending | None:
        async with self._slots:
            if not claim(task.id):
                return None
            return await run_async(self.registry, task, lease, link)

    def abandon(self, task_id: str) -> None:
        """Set the execution's flag, then cancel its coroutine."""
        with self._lock:
            running = self._running.pop(task_id, None)
        if running is not None:
            future, link = running
            link.stop.set()
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

    def __init__(
        self,
        app_path: str,
        slots: int,
        start_limit: float = START_LIMIT,
        progress: Progress | None = None,
    ) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._start_limit = start_limit
        self._progress = progress
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
            ending = child.run(task, lease, self._progress)
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
            child.kill(task_id)

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
        self._running: str | None = None  # the task it runs, while it runs one
        self._lock = threading.Lock()
        """Held while a kill detaches the process and its pipe: the child is never
        handed to the next task half-killed."""

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
            self._killed, self._running = False, task.id
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
        return ending

    def _lost(self) -> Raised | None:
        """The pipe broke mid-task: ``None`` if a kill did it (the execution was
        abandoned), else the attempt fails with how the child died."""
        with self._lock:
            if self._killed:
                return None
            process, self._process, self._conn = self._process, None, None
        code = None
        if process is not None:
            process.join(5)  # reaped, so that its exit code is known
            code = process.exitcode
        return Raised(TaskError("WorkerCrashed", f"the child process died (exit code {code})"))

    def kill(self, task_id: str | None = None) -> None:
        """Kill the process (only if it runs ``task_id``, when one is named: the
        execution it was meant for may have ended, and the child gone on to the
        next task). Its process and pipe are let go of before anything else, so
        the next :meth:`warm` starts a fresh one, never reusing this one."""
        with self._lock:
            if task_id is not None and self._running != task_id:
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


def child_main(app_path: str, conn: Connection) -> None:
    """The loop of a pool child: receive a task, run it, send its ending back."""
    registry = load_registry(app_path)
    loop = ThreadLoop()  # for async def tasks; abandoning one kills this process
    conn.send(READY)

    def report(fraction: float, note: str | None) -> None:
        conn.send(Progressed(fraction, note))
        conn.recv()  # RECORDED: written, as on the other pools, when this returns

    try:
        while (message := conn.recv()) is not None:
            task, lease = message
            ending = run_in_thread(registry, task, lease, loop, link=Link(report=report))
            assert ending is not None  # nothing here cancels: only a kill abandons
            conn.send(ending)
    finally:
        loop.close()


def make_executor(
    pool: str, registry: Registry, concurrency: int, progress: Progress | None = None
) -> Executor:
    """The executor for ``pool``: threads, async or processes; ``progress``
    writes what tasks report."""
    if pool == "threads":
        return ThreadExecutor(registry, concurrency, progress=progress)
    if pool == "async":
        return AsyncExecutor(registry, concurrency, progress)
    if pool == "processes":
        if registry.import_path is None:
            raise ConfigError(
                "the process pool needs the App's import path: run `tenure worker --app "
                "module:app`, or set app.import_path = 'module:app'"
            )
        return ProcessExecutor(registry.import_path, concurrency, progress=progress)
    raise ConfigError(f"pool must be threads, async or processes, not {pool!r}")
