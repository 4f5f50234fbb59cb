"""Live updates: one follower of the event log per server, fanned out to every
open page as server-sent events.

A browser tab that holds ``/live`` open gets ``event: change`` whenever tasks
it cares about move (any task, or one task for its detail page), at most a few
times a second; the page's script then reloads the parts that show the queue.
Following the log once per server rather than once per tab keeps a busy
dashboard from multiplying the store's reads, and the follower stops when the
last tab goes away. A stream ends after a few minutes (the browser reconnects
on its own), so a server that stops never waits long on an idle tab.

The follower is a :class:`~tenure.events.Subscription` (a thread, stopped by
its owner). Which tabs listen, and whether the follower runs, is kept on the
server's event loop and changed only by code that does not await: a tab that
goes away at any moment (its stream cancelled mid-await, as a disconnect or
a server's stop does) always leaves, and a follower started for tabs that left
meanwhile is stopped as soon as it is up. Starting and stopping the follower
(store reads, a thread's join) run on the executor, awaited by nobody, so no
cancellation can cut them short. Each tab holds one flag, not a queue: however
many events arrive while a tab is slow to read, it owes one ``change``. A
follower that ends by itself (the store refuses the log, a bug) is noticed
within :data:`WATCH` seconds and ends every stream with a hint to reconnect a
little later; the browsers' reconnections start a new follower.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field

from starlette.responses import StreamingResponse
from starlette.types import Send

from tenure.errors import TenureError
from tenure.events import Events, Subscription
from tenure.store.types import Event

log = logging.getLogger("tenure.http")

PAUSE = 0.5
"""Least seconds between two changes told to one tab."""

LIFETIME = 300.0
"""Seconds a stream stays open before the browser is told to reconnect."""

RETRY_LATER = 5.0
"""Seconds the browser waits before reconnecting while the store is out of reach."""

KEEPALIVE = 15.0
"""Seconds of silence after which a comment line is sent, so proxies keep the
stream (and a tab that went away is noticed)."""

WATCH = 1.0
"""Seconds between two looks at whether the follower still runs."""

STOP_WAIT = 5.0
"""Seconds a stop waits for the follower's thread (its read in progress) to end:
it is told to stop at once, and ends after that read anyway."""


@dataclass(eq=False)
class _Listener:
    task_id: str | None
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    ended: bool = False
    """The follower stopped: the stream ends, and the browser reconnects."""


@dataclass(eq=False)
class _Hub:
    """The tabs of one event loop, and their follower. Every field but the
    pending ids is the loop's alone."""

    loop: asyncio.AbstractEventLoop
    listeners: set[_Listener] = field(default_factory=set)
    subscription: Subscription | None = None
    starting: bool = False
    watch: asyncio.Task[None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    pending: set[str] = field(default_factory=set)
    """Ids of the tasks that moved since the loop last looked (the follower's
    thread adds, the loop takes), under ``lock``."""

    def deliver(self, event: Event) -> None:
        """On the follower's thread: note the task, and wake the loop once for
        however many events come before it looks."""
        with self.lock:
            first = not self.pending
            self.pending.add(event.task_id)
        if first:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens
                self.loop.call_soon_threadsafe(self.wake)

    def wake(self) -> None:
        """On the loop: flag each tab that one of the moved tasks concerns."""
        with self.lock:
            moved, self.pending = self.pending, set()
        for listener in self.listeners:
            if listener.task_id is None or listener.task_id in moved:
                listener.changed.set()

    def end(self) -> None:
        """On the loop: the follower is gone; every tab's stream ends."""
        for listener in self.listeners:
            listener.ended = True
            listener.changed.set()


class Broadcaster:
    """Follows the event log while at least one tab listens, and wakes the tabs
    each event concerns."""

    def __init__(self, events: Callable[[], Events]) -> None:
        self._events = events
        """The App's event log, its store opened if need be: called on a thread."""
        self._hubs: dict[asyncio.AbstractEventLoop, _Hub] = {}

    # -- on the loop, never awaiting ----------------------------------------------------

    def _join(self, listener: _Listener) -> _Hub:
        loop = asyncio.get_running_loop()
        hub = self._hubs.setdefault(loop, _Hub(loop))
        hub.listeners.add(listener)
        if hub.subscription is None and not hub.starting:
            hub.starting = True
            started = loop.run_in_executor(None, self._subscribe, hub)
            started.add_done_callback(lambda done: self._started(hub, done))
        return hub

    def _leave(self, hub: _Hub, listener: _Listener) -> None:
        hub.listeners.discard(listener)
        if hub.listeners:
            return
        self._stop(hub)
        if not hub.starting and self._hubs.get(hub.loop) is hub:
            del self._hubs[hub.loop]

    def _stop(self, hub: _Hub) -> None:
        subscription, hub.subscription = hub.subscription, None
        if hub.watch is not None:
            hub.watch.cancel()
            hub.watch = None
        if subscription is not None:
            try:
                hub.loop.run_in_executor(None, subscription.stop, STOP_WAIT)
            except RuntimeError:  # the executor is shut (the loop ends): tell it, do not wait
                subscription.stop(0)

    def _started(self, hub: _Hub, done: asyncio.Future[Subscription]) -> None:
        hub.starting = False
        if done.cancelled():  # the loop ends: nobody listens any more
            return
        failure = done.exception()
        if failure is not None:
            _log_failure(failure)
            hub.end()
        else:
            hub.subscription = done.result()
            hub.watch = hub.loop.create_task(self._watch(hub, hub.subscription))
        if not hub.listeners:  # every tab left while it started
            self._stop(hub)
            if self._hubs.get(hub.loop) is hub:
                del self._hubs[hub.loop]

    async def _watch(self, hub: _Hub, subscription: Subscription) -> None:
        """End every tab's stream if the follower ends by itself."""
        while subscription.running:
            await asyncio.sleep(WATCH)
        if hub.subscription is subscription:
            hub.subscription = hub.watch = None
            _log_failure(subscription.error or RuntimeError("the follower stopped"))
            hub.end()

    def close(self) -> None:
        """End every tab's stream now, from any thread (a server that stops): each
        tab is told to come back later, to the next server, instead of being cut
        off when the server's grace period runs out."""
        for hub in list(self._hubs.values()):
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens
                hub.loop.call_soon_threadsafe(hub.end)

    # -- on the executor ----------------------------------------------------------------

    def _subscribe(self, hub: _Hub) -> Subscription:
        """A follower of the log from its end as it is now."""
        events = self._events()
        _, cursor = events.tail(1)
        return events.subscribe(hub.deliver, cursor)

    # -- a tab --------------------------------------------------------------------------

    async def stream(self, task_id: str | None) -> AsyncGenerator[str, None]:
        """The server-sent events of one tab, for :data:`LIFETIME` seconds."""
        listener = _Listener(task_id)
        hub = self._join(listener)
        try:
            yield "retry: 2000\n\n"
            ends = time.monotonic() + LIFETIME
            while (left := ends - time.monotonic()) > 0:
                try:
                    async with asyncio.timeout(min(left, KEEPALIVE)):
                        await listener.changed.wait()
                except TimeoutError:
                    yield ": still here\n\n"
                    continue
                if listener.ended:
                    yield f"retry: {int(RETRY_LATER * 1000)}\n\n"
                    return
                listener.changed.clear()
                yield "event: change\ndata: {}\n\n"
                await asyncio.sleep(PAUSE)
        finally:
            self._leave(hub, listener)


def _log_failure(failure: BaseException) -> None:
    if isinstance(failure, TenureError):  # the store is out of reach, or refused the log
        log.warning("live updates stopped: %s", failure)
    else:
        log.error("live updates failed", exc_info=failure)


class EventStream(StreamingResponse):
    """A stream of server-sent events whose generator is closed as soon as the
    response ends, however it ends (the client gone, the server stopping), not
    whenever the garbage collector gets to it."""

    def __init__(self, events: AsyncGenerator[str, None], headers: dict[str, str]) -> None:
        super().__init__(events, media_type="text/event-stream", headers=headers)
        self._events = events

    async def stream_response(self, send: Send) -> None:
        try:
            await super().stream_response(send)
        finally:
            with contextlib.suppress(RuntimeError):  # already running: it is ending
                await self._events.aclose()
