"""Turning a blocking ``wait(timeout)`` into a ``threading.Event`` that is set.

A store that can only be waited on (SQLite watching its change counter) offers
``*_notify(wake)`` through a thread of its own that loops on the wait and sets
``wake`` each time it returns early; a store that is told of changes
(PostgreSQL's LISTEN) sets ``wake`` from where it hears of them instead.

Either way the subscriber gets a :class:`Wakeups`, through which it also
says when it is idle and when busy: PostgreSQL's wake-ups cost every writer
something (see ``postgres/wanting.py``), so it sends them only while someone
is idle; a store whose wake-ups are free ignores both.

:class:`LoopWake` is that flag for a coroutine: set from the store's thread, it
wakes an event loop's wait too (async followers, awaited task handles).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable

from tenure.errors import TenureError

log = logging.getLogger("tenure.store")

FOLLOW_START_TIMEOUT = 5.0
"""Seconds a ``*_notify`` call waits for its thread to start following."""


class Wakeups:
    """What ``task_notify`` and ``event_notify`` return. Calling it ends the
    wake-ups; :meth:`idle` and :meth:`busy` tell whether they are wanted."""

    def __init__(self, end: Callable[[], None]) -> None:
        self._end = end

    def __call__(self) -> None:
        self._end()

    def idle(self, since: float) -> bool:
        """The subscriber is about to wait for news, having last looked for work
        in a read begun at ``since`` (``time.monotonic()``). True: look once more
        before waiting, as news from before now may not wake the wait."""
        return False

    def busy(self) -> None:
        """The subscriber has more work than room: no wake-ups are needed for now."""


def notify_from_waits(wait: Callable[[float], bool], wake: threading.Event, what: str) -> Wakeups:
    """Set ``wake`` each time ``wait`` reports news, on a thread, until the
    returned :class:`Wakeups` is called. The first wait (of zero seconds) happens before
    this returns, so news that comes later is not missed."""
    stopped, following = threading.Event(), threading.Event()
    guard = threading.Lock()  # no wake once unsubscribe has returned

    def follow() -> None:
        with contextlib.suppress(TenureError):
            wait(0)  # from here on, news is noticed
        following.set()
        while not stopped.is_set():
            try:
                news = wait(1.0)
            except TenureError as exc:
                if stopped.is_set():  # unsubscribed, and the store closed since
                    return
                log.warning("waiting for %s: %s", what, exc)
                stopped.wait(1.0)
                continue
            with guard:
                if news and not stopped.is_set():
                    wake.set()

    def unsubscribe() -> None:
        with guard:
            stopped.set()

    threading.Thread(target=follow, name=f"tenure-{what.replace(' ', '-')}", daemon=True).start()
    following.wait(FOLLOW_START_TIMEOUT)
    return Wakeups(unsubscribe)


class LoopWake(threading.Event):
    """The flag a store sets from its own threads when events may have been
    appended, which also wakes a coroutine waiting on an event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._loop = loop
        self._ready = asyncio.Event()

    def set(self) -> None:
        super().set()
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            self._loop.call_soon_threadsafe(self._ready.set)

    def clear(self) -> None:
        super().clear()
        self._ready.clear()

    async def wait_async(self, timeout: float) -> None:
        """Until set, or ``timeout`` seconds."""
        if self.is_set():
            return
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a
        # cancellation that arrives as the flag is set, and the follower would
        # then outlive the task that cancelled it.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._ready.wait()


async def registered_async(
    notify: Callable[[threading.Event], Wakeups], wake: threading.Event
) -> Wakeups:
    """``notify(wake)`` (a store's ``event_notify``), run on the executor; its
    unsubscribe. If the awaiting caller is cancelled meanwhile, the registration
    still completes on its thread: it is undone as soon as it does, never left
    waking no one."""
    registering = asyncio.ensure_future(asyncio.to_thread(notify, wake))
    try:
        return await asyncio.shield(registering)
    except asyncio.CancelledError:
        registering.add_done_callback(_undo_registration)
        raise


def _undo_registration(registering: asyncio.Future[Wakeups]) -> None:
    if not registering.cancelled() and registering.exception() is None:
        asyncio.get_running_loop().run_in_executor(None, registering.result())
