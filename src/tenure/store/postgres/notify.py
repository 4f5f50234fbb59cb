"""Wake-ups for idle workers and followers: LISTEN/NOTIFY turned into
``task_wait`` and ``event_wait``.

The schema's triggers ``pg_notify('tenure_tasks', topic)`` whenever a task
becomes pending, inside the writing transaction, so a notification is sent when
and only if the task is committed; and only while an idle waiter is registered
for the topic (see ``wanting``): a subscriber says when it is idle. One
:class:`Listener` per store holds a dedicated connection (never a pooled one: a
pooled session is shared, and a LISTEN on it would follow it around) and a
thread that blocks on its socket.

Notifications only wake; they are never the record. A waiter may wake for
nothing (it reserves, finds no work, waits again) and, while the listening
connection is down, may sleep its whole timeout: callers poll at that timeout
anyway. After the connection comes back every waiter is woken, since tasks may
have been created while no one listened.

Each thread remembers how far it has seen: a notification that arrives while a
worker is busy reserving still wakes its next wait at once. A subscriber's event
is set by the listening thread itself, one hand-off fewer than a thread of its
own blocked in ``wait``.
"""

from __future__ import annotations

import logging
import math
import os
import selectors
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg
from psycopg import pq

from tenure.errors import InvalidInput
from tenure.retry import Backoff
from tenure.store import validate
from tenure.store.postgres.wanting import Topics, Wants
from tenure.store.waking import Wakeups

log = logging.getLogger(__name__)

Connect = Callable[[], psycopg.Connection[Any]]
Registering = Callable[[], AbstractContextManager[psycopg.Connection[Any]]]

LEASES_CHANNEL = b"tenure_leases"
LEASES_TAKEN = ""
"""The topic a notification on ``tenure_leases`` is recorded under: a running
task was taken from its holder (cancelled, revoked). The tasks' listener hears
it (one listening connection per store, not two), and no task's topic can be
empty, so no worker waiting for tasks takes it for one, unless it waits for
any topic, and then only looks once for nothing."""

RECONNECT = Backoff(base=0.1, maximum=5.0, jitter=0.5)
"""The pauses between attempts to reconnect the listener: 0.1 s first, 5 s at
most, spread so that the listeners of a server back from an outage do not all
connect at once."""


class Listener:
    """Follows one channel (``tenure_tasks``, or ``tenure_events``); lets
    threads wait for its news, and keeps their registration as waiting."""

    def __init__(
        self, connect: Connect, q: Mapping[str, str], registering: Registering, *, events: bool
    ) -> None:
        self._connect = connect
        self._wants = Wants(registering, q, events=events, lapsed=self._look_again)
        self._listen_sql = q["listen_events" if events else "listen"]
        self._cond = threading.Condition()
        self._count = 0  # notifications (and reconnections) seen so far
        self._latest: dict[str, int] = {}  # topic -> _count at its last notification
        self._resync = 0  # _count at the last reconnection: any topic may have news
        self._listening = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._wake_r = self._wake_w = -1  # a pipe that interrupts the thread's select
        self._seen = threading.local()
        self._subscribers: list[tuple[frozenset[str] | None, threading.Event]] = []

    def wait(self, topics: Sequence[str] | None, timeout: float) -> bool:
        """Block until a task may have become pending on ``topics`` (``None``:
        any) since this thread's last wait, or ``timeout`` seconds pass. True
        at once when the thread must look again first (it was just registered
        as waiting: see ``wanting``)."""
        with self._cond:
            self._start()
            heard = self._count
        key, looked_at = threading.get_ident(), getattr(self._seen, "at", -math.inf)
        try:
            if self._wants.want(key, _frozen(topics), looked_at):
                # The caller looks again: what was heard so far is seen by that look.
                self._seen.count = heard
                return True
            with self._cond:
                seen_count: int = getattr(self._seen, "count", 0)
                woken = self._cond.wait_for(lambda: self._news(topics, seen_count), timeout)
                self._seen.count = self._count
                return bool(woken) and not self._closed
        finally:
            self._seen.at = time.monotonic()
            self._wants.unwant(key)

    def subscribe(self, topics: Sequence[str] | None, wake: threading.Event) -> Wakeups:
        """Set ``wake`` from the listening thread itself on every notification
        for ``topics`` (``None``: any) and on every reconnection, until the
        returned subscription is called. Notifications are sent only while a
        subscriber says it is idle (:class:`Wanting`)."""
        entry, key = (_frozen(topics), wake), object()
        with self._cond:
            self._start()
            self._subscribers.append(entry)

        def unsubscribe() -> None:
            self._wants.unwant(key)
            with self._cond:
                if entry in self._subscribers:
                    self._subscribers.remove(entry)

        return Wanting(unsubscribe, self._wants, key, entry[0])

    def ready(self, timeout: float) -> bool:
        """Start listening if need be; block until listening or ``timeout``."""
        with self._cond:
            self._start()
            self._cond.wait_for(lambda: self._listening or self._closed, timeout)
            return self._listening and not self._closed

    def close(self) -> None:
        """Stop listening and wake every waiter; later waits return False at once.
        The registration as waiting is removed last (it may wait on the database)."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            os.write(self._wake_w, b"x")
            thread.join()
            os.close(self._wake_r)
            os.close(self._wake_w)
        self._wants.close()

    # -- waiting side (under self._cond) -----------------------------------------

    def _start(self) -> None:
        if self._thread is None and not self._closed:
            self._wake_r, self._wake_w = os.pipe()
            self._thread = threading.Thread(target=self._run, name="tenure-listener", daemon=True)
            self._thread.start()

    def _news(self, topics: Sequence[str] | None, since: int) -> bool:
        if self._closed or self._resync > since:
            return True
        if topics is None:
            return self._count > since
        return any(self._latest.get(topic, 0) > since for topic in topics)

    # -- listening thread ---------------------------------------------------------

    def _run(self) -> None:
        pauses = RECONNECT.delays()
        while not self._closed:
            try:
                with self._connect() as conn:
                    conn.execute(self._listen_sql)
                    self._set_listening(True)
                    pauses = RECONNECT.delays()  # connected: the next outage starts over
                    self._follow(conn)
            except (psycopg.Error, OSError) as exc:
                log.warning("tenure listener lost its connection: %s", exc)
            finally:
                self._set_listening(False)
            if self._pause(next(pauses)):
                return

    def _follow(self, conn: psycopg.Connection[Any]) -> None:
        """Deliver notifications until closed; raise when the connection breaks."""
        pgconn = conn.pgconn
        encoding = conn.info.encoding
        with selectors.DefaultSelector() as selector:
            selector.register(pgconn.socket, selectors.EVENT_READ, "db")
            selector.register(self._wake_r, selectors.EVENT_READ, "stop")
            while True:
                ready = {key.data for key, _ in selector.select()}
                if "stop" in ready:
                    return
                pgconn.consume_input()  # raises OperationalError on a dead connection
                if pgconn.status == pq.ConnStatus.BAD:
                    raise psycopg.OperationalError("the listening connection broke")
                topics = []
                while (notify := pgconn.notifies()) is not None:
                    if notify.relname == LEASES_CHANNEL:
                        topics.append(LEASES_TAKEN)
                    else:
                        topics.append(notify.extra.decode(encoding))
                if topics:
                    self._record(topics)

    def _record(self, topics: list[str]) -> None:
        with self._cond:
            self._count += 1
            for topic in topics:
                self._latest[topic] = self._count
            self._cond.notify_all()
            for wanted, wake in self._subscribers:
                if wanted is None or not wanted.isdisjoint(topics):
                    wake.set()

    def _look_again(self) -> None:
        """Tasks (or events) may have gone unnotified: every waiter and every
        subscriber looks again."""
        with self._cond:
            self._count += 1
            self._resync = self._count
            for _, wake in self._subscribers:
                wake.set()
            self._cond.notify_all()

    def _set_listening(self, listening: bool) -> None:
        if listening:  # news from before LISTEN took effect was not heard: look once
            self._look_again()
        with self._cond:
            self._listening = listening
            self._cond.notify_all()

    def _pause(self, seconds: float) -> bool:
        """Wait ``seconds`` before reconnecting; True if closed meanwhile."""
        with selectors.DefaultSelector() as selector:
            selector.register(self._wake_r, selectors.EVENT_READ)
            return bool(selector.select(seconds)) or self._closed


class Polling:
    """The listeners' stand-in where LISTEN cannot be heard (through a pooler
    in transaction mode, with no ``listen=`` URL: see ``pooler``). Nothing
    wakes a waiter early, so workers and followers look for news at their poll
    interval; the first use logs ``warning``, once for the store."""

    def __init__(self, warning: str) -> None:
        self._warning: str | None = warning
        self._lock = threading.Lock()
        self._closed = threading.Event()

    def wait(self, topics: Sequence[str] | None, timeout: float) -> bool:
        """Sleep ``timeout`` seconds (less if closed): never woken early."""
        self._warn()
        self._closed.wait(timeout)
        return False

    def subscribe(self, topics: Sequence[str] | None, wake: threading.Event) -> Wakeups:
        """A subscription that never sets ``wake``."""
        self._warn()
        return Wakeups(lambda: None)

    def ready(self, timeout: float) -> bool:
        """False at once: this store does not listen."""
        self._warn()
        return False

    def close(self) -> None:
        self._closed.set()

    def _warn(self) -> None:
        with self._lock:
            warning, self._warning = self._warning, None
        if warning is not None:
            log.warning("%s", warning)


class Wanting(Wakeups):
    """A subscription to a listener: idle, its topics are registered as wanted."""

    def __init__(self, end: Callable[[], None], wants: Wants, key: object, topics: Topics) -> None:
        super().__init__(end)
        self._wants, self._key, self._topics = wants, key, topics

    def idle(self, since: float) -> bool:
        return self._wants.want(self._key, self._topics, since)

    def busy(self) -> None:
        self._wants.unwant(self._key)


class Listening:
    """The PostgreSQL store's wake-ups: new tasks (``tenure_tasks``, for
    workers) and appended events (``tenure_events``, for followers), each on a
    listening connection of its own, opened on first use."""

    _listener: Listener | Polling
    _event_listener: Listener | Polling

    event_poll = 1.0
    """Seconds between a follower's reads when no notification comes: the
    safety net for one lost while the listener reconnected, and for events held
    back by a transaction that appended none (it ends without notifying)."""

    def task_wait(self, topics: Sequence[str] | None, timeout: float) -> bool:
        """Block until a task may have become pending on ``topics`` (``None``:
        any) since this thread's previous wait, or ``timeout`` seconds pass.

        True when woken by a notification (possibly one that arrived while the
        thread was busy), and at once when the thread has just been registered
        as waiting (look, then wait again); False on timeout.
        """
        timeout = validate.seconds(timeout, "timeout", allow_zero=True)
        return self._listener.wait(_topics(topics), timeout)

    def task_notify(self, topics: Sequence[str] | None, wake: threading.Event) -> Wakeups:
        """Set ``wake`` from the listening thread as each notification for
        ``topics`` arrives (and after each reconnection): notifications are
        sent while the subscription says it is idle."""
        return self._listener.subscribe(_topics(topics), wake)

    def listen(self, timeout: float = 10.0) -> bool:
        """Start listening for new tasks now; True once listening.

        ``task_wait`` starts listening by itself. A thread's first
        ``task_wait`` also registers it as waiting (and returns True at once:
        look again); no task created after that look is missed by its next.
        """
        return self._listener.ready(validate.seconds(timeout, "timeout", allow_zero=True))

    def lease_notify(self, wake: threading.Event) -> Wakeups:
        """Set ``wake`` from the listening thread as each notice of a running
        task taken from its holder arrives (and after each reconnection); the
        cancel and revoke statements send it whoever listens, so no
        registration as idle is made."""
        subscription = self._listener.subscribe([LEASES_TAKEN], wake)
        self._listener.ready(LISTEN_START_TIMEOUT)
        return subscription

    def event_wait(self, timeout: float) -> bool:
        """Block until events may have been appended since this thread's
        previous wait, or ``timeout`` seconds pass; True when woken early."""
        timeout = validate.seconds(timeout, "timeout", allow_zero=True)
        return self._event_listener.wait(None, timeout)

    def event_notify(self, wake: threading.Event) -> Wakeups:
        """Set ``wake`` from the listening thread as each notification of
        appended events arrives (and after each reconnection); listening has
        begun, and the follower is registered, when this returns, or else the
        follower's poll covers the gap. A follower is idle all along."""
        subscription = self._event_listener.subscribe(None, wake)
        self._event_listener.ready(LISTEN_START_TIMEOUT)
        # Whether to look again is moot: the follower reads once this returns.
        subscription.idle(time.monotonic())
        return subscription


LISTEN_START_TIMEOUT = 5.0
"""Seconds ``event_notify`` waits for the listening connection."""


def _frozen(topics: Sequence[str] | None) -> Topics:
    return None if topics is None else frozenset(topics)


def _topics(topics: Sequence[str] | None) -> list[str] | None:
    if topics is None:
        return None
    if isinstance(topics, str):
        raise InvalidInput("topics", "must be a collection of topics")
    return [validate.text(topic, "topics") for topic in topics]
