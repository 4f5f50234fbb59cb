"""Event loops for ``async def`` tasks on pools that run one execution per thread.

The thread pool and the children of the process pool run a task's function in
the thread that took it. A coroutine function needs an event loop there, so each
such thread owns one (:class:`ThreadLoop`): made when the thread first runs a
coroutine, reused for every coroutine after, and closed (leftover tasks
cancelled, async generators and the default executor shut down) when the thread
ends.

Why a loop per thread rather than one loop thread the whole pool shares:

- Isolation stays the thread pool's. Code on the thread pool may block (a
  synchronous client, CPU work, ``time.sleep`` in an ``async def``); on a shared
  loop one such execution would stall every other coroutine of the pool, and the
  cancellations of their timeouts with them. On its own loop it costs only its
  own thread, as a blocking sync task does.
- Concurrency stays what ``--concurrency`` says: one execution per thread, with
  no second scheduler whose queue the pool cannot see.
- A reused loop costs little: running a coroutine on it takes about a quarter of
  the time of ``asyncio.run``, which makes and closes a loop each time.

The price is that coroutines on one thread never overlap; for many concurrent
I/O-bound tasks the async pool (one loop, every execution an asyncio task)
remains the efficient choice.

Each execution runs in a fresh copy of the thread's context, so context
variables (``tenure.current()`` among them) never leak from one task to the
next; asyncio tasks it leaves behind are cancelled when it ends, as
``asyncio.run`` does, since the loop does not run between executions. Another
thread (the worker's keepalive, on a timeout or a lost lease) cancels an
execution through its :class:`Cancellation`, by asyncio cancellation: the
coroutine gets ``CancelledError`` at its next ``await``, as on the async pool.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Cancellation:
    """Lets another thread cancel one coroutine execution, before or while it runs.

    Cancelled before it starts, the coroutine never runs; once it has ended,
    cancelling does nothing (and never touches a loop that may be closed).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requested = False
        self._running: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None

    @property
    def requested(self) -> bool:
        return self._requested

    def cancel(self) -> None:
        with self._lock:
            self._requested = True
            if self._running is not None:
                loop, task = self._running
                loop.call_soon_threadsafe(task.cancel)

    def _attach(self) -> bool:
        """Called in the execution's task: ``False`` if it is cancelled already."""
        with self._lock:
            if self._requested:
                return False
            task = asyncio.current_task()
            assert task is not None  # always called inside a task
            self._running = (asyncio.get_running_loop(), task)
            return True

    def _detach(self) -> None:
        with self._lock:
            self._running = None


class ThreadLoop:
    """The event loop of one thread, made on first use; :meth:`close` it when
    the thread is done with it. Only the owning thread may call :meth:`run`."""

    def __init__(self) -> None:
        self._runner: asyncio.Runner | None = None

    def run(self, coro: Coroutine[Any, Any, T], cancellation: Cancellation | None = None) -> T:
        """Run ``coro`` to its end in a fresh copy of this thread's context.
        Raises ``asyncio.CancelledError`` if it was cancelled."""
        if self._runner is None:
            self._runner = asyncio.Runner()
        context = contextvars.copy_context()
        try:
            return self._runner.run(_guarded(coro, cancellation), context=context)
        finally:
            if asyncio.all_tasks(self._runner.get_loop()):
                self._runner.run(_cancel_the_rest())

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None


async def _guarded(coro: Coroutine[Any, Any, T], cancellation: Cancellation | None) -> T:
    if cancellation is None:
        return await coro
    if not cancellation._attach():
        coro.close()
        raise asyncio.CancelledError
    try:
        return await coro
    finally:
        cancellation._detach()


async def _cancel_the_rest() -> None:
    """Cancel the tasks an execution left behind and wait until they end."""
    current = asyncio.current_task()
    rest = [task for task in asyncio.all_tasks() if task is not current]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)
