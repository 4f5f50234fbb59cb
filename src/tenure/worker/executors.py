"""Where task bodies run: threads, an asyncio loop, or child processes.

The worker's control plane (reserving, keepalive, completing) is the same for
all three; an executor only starts an execution, reports its ending through
``deliver``, and abandons it on request: a child process is told to stop, then
killed (see ``processes``), a coroutine
is cancelled (on the async pool's loop or on its pool thread's own), a sync
function in a thread cannot be stopped, so its ending is ignored (the worker
discards endings of executions it abandoned). Every pool runs ``async def``
tasks; only the async pool runs many of them at once on one thread.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
import time
from concurrent.futures import Future
from typing import Protocol

from tenure.control import Link
from tenure.errors import ConfigError
from tenure.registry import Registry
from tenure.task import Lease, Task
from tenure.worker.loops import Cancellation, ThreadLoop
from tenure.worker.processes import ProcessExecutor, Recycle
from tenure.worker.progress import Progress, link_of
from tenure.worker.runner import (
    Claim,
    Deliver,
    Ending,
    ending_of_exception,
    is_coroutine_task,
    run_async,
    run_in_thread,
)

CANCEL_GRACE = 1.0
"""Seconds a cancelled coroutine on the thread pool gets to end before its thread
is given up for stuck (it blocks its loop, or ignores the cancellation) and a
new thread takes its place."""

Job = tuple[Task, Lease, Deliver, Claim]


class Executor(Protocol):
    """Runs at most its number of slots at once; more may wait their turn."""

    def submit(self, task: Task, lease: Lease, deliver: Deliver, claim: Claim) -> None: ...

    def abandon(self, task_id: str) -> None: ...

    def resize(self, slots: int) -> None: ...

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
        self._slots = slots
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
            with self._lock:
                self._serving.discard(me)
            loop.close()

    def resize(self, slots: int) -> None:
        """Run ``slots`` executions at once: more threads at once, or fewer as
        threads come for their next job (each surplus one ends there)."""
        with self._lock:
            change, self._slots = slots - self._slots, slots
        for _ in range(change):
            self._spawn()
        for _ in range(-change):
            self._jobs.put(None)

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
        for _ in threads:  # one each (a thread a shrink ends takes one of its own)
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
        self._size = slots
        self._holding: set[asyncio.Task[None]] = set()
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

    def resize(self, slots: int) -> None:
        """Run ``slots`` executions at once: more permits at once; fewer as
        running ones end (their permits are kept back)."""
        change, self._size = slots - self._size, slots
        self._loop.call_soon_threadsafe(self._resized, change)

    def _resized(self, change: int) -> None:
        for _ in range(change):
            self._slots.release()
        if change < 0:
            held = self._loop.create_task(self._keep_back(-change))
            self._holding.add(held)  # a reference, until it is done
            held.add_done_callback(self._holding.discard)

    async def _keep_back(self, permits: int) -> None:
        for _ in range(permits):
            await self._slots.acquire()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


def make_executor(
    pool: str,
    registry: Registry,
    concurrency: int,
    progress: Progress | None = None,
    recycle: Recycle | None = None,
) -> Executor:
    """The executor for ``pool``: threads, async or processes; ``progress``
    writes what tasks report; ``recycle`` says when a process-pool child is
    replaced by a fresh one."""
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
        return ProcessExecutor(
            registry.import_path, concurrency, progress=progress, recycle=recycle
        )
    raise ConfigError(f"pool must be threads, async or processes, not {pool!r}")
