"""Live updates: one follower of the event log per server, fanned out to every
open page as server-sent events.

A browser tab that holds ``/live`` open gets ``event: change`` whenever tasks
it cares about move (any task, or one task for its detail page), at most a few
times a second; the page's script then reloads the parts that show the queue.
Following the log once per server rather than once per tab keeps a busy
dashboard from multiplying the store's reads, and the follower stops when the
last tab goes away. A stream ends after a few minutes (the browser reconnects
on its own), so a server that stops never waits long on an idle tab.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

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
"""Seconds of silence after which a comment line is sent, so proxies keep the stream."""


@dataclass(eq=False)
class _Listener:
    loop: asyncio.AbstractEventLoop
    task_id: str | None
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class Broadcaster:
    """Follows the event log while at least one tab listens, and wakes the tabs
    each event concerns."""

    def __init__(self, events: Callable[[], Events]) -> None:
        self._events = events
        self._lock = threading.Lock()
        self._listeners: set[_Listener] = set()
        self._subscription: Subscription | None = None

    def _deliver(self, event: Event) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            if listener.task_id is None or listener.task_id == event.task_id:
                listener.loop.call_soon_threadsafe(listener.changed.set)

    def _join(self, listener: _Listener) -> None:
        with self._lock:
            self._listeners.add(listener)
            if self._subscription is None or self._subscription.error is not None:
                events = self._events()
                _, cursor = events.tail(1)
                self._subscription = events.subscribe(self._deliver, cursor)

    def _leave(self, listener: _Listener) -> None:
        with self._lock:
            self._listeners.discard(listener)
            subscription = self._subscription if not self._listeners else None
            if subscription is not None:
                self._subscription = None
        if subscription is not None:
            subscription.stop()

    async def stream(self, task_id: str | None) -> AsyncIterator[str]:
        """The server-sent events of one tab, for :data:`LIFETIME` seconds."""
        listener = _Listener(asyncio.get_running_loop(), task_id)
        try:
            await asyncio.to_thread(self._join, listener)
        except TenureError as exc:  # the store is out of reach: the browser retries
            log.warning("live updates unavailable: %s", exc)
            await asyncio.to_thread(self._leave, listener)
            yield f"retry: {int(RETRY_LATER * 1000)}\n\n"
            return
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
                listener.changed.clear()
                yield "event: change\ndata: {}\n\n"
                await asyncio.sleep(PAUSE)
        finally:
            await asyncio.to_thread(self._leave, listener)
