"""Registrations of idle waiters: the triggers notify only while one is live.

Every transaction that notifies commits alone (PostgreSQL takes a lock for the
whole database at the commit of one that has notifications queued), so the
schema's triggers notify only for topics some idle worker takes, and for events
only while a follower follows (``0011_wake_only_waiters.sql``). This module
keeps one store's registration in ``wake_wanted``: one row per listener,
covering every topic its waiters are idle on, renewed before it expires, and
let go of (at the next renewal) once nobody is idle.

A registration that widens the row takes the lock the triggers check under and
commits before its waiter looks for work again: whatever a producer committed
without seeing it, that look finds. So :meth:`Wants.want` says whether the
waiter must look again before it waits. A registration that cannot be made (the
database is down, or the lock is not had in time) leaves the waiter to poll.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any, NamedTuple

import psycopg

from tenure.errors import TenureError

log = logging.getLogger("tenure.store")

Connection = psycopg.Connection[Any]

TTL = 30.0
"""Seconds a registration lives unless renewed."""
RENEW = TTL / 3
"""Seconds between renewals: two may fail before the registration lapses; also
how long after a failed registration a waiter leaves retrying to the renewals."""
MARGIN = 1.0
"""Seconds before its end at which a registration is taken as lapsed: a renewal
that begins later may commit after the server's ``until``."""
CLOSE_WAIT = 1.0
"""Seconds closing waits to remove the registration."""

Topics = frozenset[str] | None
"""The topics a waiter takes; ``None``: any."""


class Registered(NamedTuple):
    """A registration made: what it covers, and when (this process's monotonic clock)."""

    covers: Topics
    made_at: float
    """Once it had committed."""
    until: float
    """Its start plus :data:`TTL`: the server's ``until`` is no earlier."""


class Wants:
    """The registration of one listener's idle waiters (for tasks, or for events)."""

    def __init__(
        self,
        connection: Callable[[], AbstractContextManager[Connection]],
        q: Mapping[str, str],
        *,
        events: bool,
        lapsed: Callable[[], None],
    ) -> None:
        self._connection = connection
        self._q = q
        self._events = events
        self._lapsed = lapsed  # wake-ups may have been missed: every waiter looks again
        self._waiter = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._wanted: dict[object, Topics] = {}
        self._wanted_lock = threading.Lock()  # guards _wanted only: never held over I/O
        self._lock = threading.Lock()  # one registration or removal at a time; guards:
        self._registered: Registered | None = None
        self._failed_at = -math.inf  # monotonic, at the last failed registration
        self._missed = False  # a registration failed since the last one made
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def want(self, key: object, topics: Topics, since: float) -> bool:
        """``key``'s waiter is idle on ``topics``, having last looked for work in
        a read begun at ``since`` (monotonic). True: it must look again before
        it waits, since a registration covering it was made after that read.
        False also when no registration can be made now: the waiter polls, and
        is woken to look again once one is."""
        if self._stop.is_set():
            return False
        with self._wanted_lock:
            self._wanted[key] = topics
            self._start()
        # Under the lock: a renewal under way may narrow what covers this waiter.
        with self._lock:
            answer = self._answer(topics, since)
            if answer is not None:
                return answer
            if time.monotonic() - self._failed_at < RENEW:
                return False  # the renewals retry; waiters need not queue on the lock
            return self._register()

    def unwant(self, key: object) -> None:
        """``key``'s waiter is busy or gone; the registration narrows at its next
        renewal (narrowing at once would only make the next idle spell pay)."""
        with self._wanted_lock:
            self._wanted.pop(key, None)

    def close(self) -> None:
        """Stop renewing and remove the registration, so writers stop notifying
        now rather than when it expires; not waiting long for a database that
        does not answer (closing must not hang on it)."""
        self._stop.set()
        with self._wanted_lock:
            self._wanted.clear()
        if self._registered is not None:
            removing = threading.Thread(target=self._remove, name="tenure-wants-drop", daemon=True)
            removing.start()
            removing.join(CLOSE_WAIT)

    def _start(self) -> None:
        """The renewing thread, on the first idle spell (under self._wanted_lock)."""
        if self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(target=self._renew, name="tenure-wants", daemon=True)
            self._thread.start()

    # -- under self._lock ---------------------------------------------------------

    def _answer(self, topics: Topics, since: float) -> bool | None:
        """Whether the waiter must look again, if a live registration covers
        ``topics``; ``None`` if none does."""
        registered = self._registered
        if (
            registered is None
            or time.monotonic() >= registered.until
            or not _covered(topics, registered.covers)
        ):
            return None
        return registered.made_at >= since

    def _register(self) -> bool:
        """Register every idle waiter's topics; True once committed. Waiters are
        woken to look again if wake-ups may have gone unsent: the registration
        had lapsed, or one failed since the last."""
        with self._wanted_lock:
            covers = _union(self._wanted.values())
        began = time.monotonic()
        params = {
            "waiter": self._waiter,
            # A follower of events wants no task's wake-up (NULL would be all).
            "topics": [] if self._events else None if covers is None else sorted(covers),
            "events": self._events,
            "ttl": TTL,
        }
        try:
            with self._connection() as conn, conn.transaction():
                conn.execute(self._q["wake_lock_timeout"])
                conn.execute(self._q["wake_lock"])
                conn.execute(self._q["wake_want"], params)
        except TenureError as exc:
            if not self._missed:
                log.warning("could not register for wake-ups (waiting by polling): %s", exc)
            self._failed_at, self._missed = time.monotonic(), True
            return False
        previous = self._registered
        lapsed = self._missed or (previous is not None and began >= previous.until - MARGIN)
        self._registered, self._missed = Registered(covers, time.monotonic(), began + TTL), False
        if lapsed:
            self._lapsed()
        return True

    def _drop(self) -> None:
        """Remove the registration, unless a waiter has become idle since."""
        with self._wanted_lock:
            if self._wanted or self._registered is None:
                return
        try:
            with self._connection() as conn:
                conn.execute(self._q["wake_drop"], {"waiter": self._waiter})
        except TenureError as exc:
            log.warning("could not remove a wake-up registration (it expires): %s", exc)
            return
        self._registered = None

    # -- the renewing thread, and closing -------------------------------------------

    def _renew(self) -> None:
        """Every :data:`RENEW` seconds: renew the registration (narrowed to the
        waiters idle now), or remove it once nobody is; and delete the
        registrations of processes long gone, outside the lock producers wait on."""
        while not self._stop.wait(RENEW):
            with self._lock:
                if self._stop.is_set():
                    return
                with self._wanted_lock:
                    wanted = bool(self._wanted)
                if wanted:
                    self._register()
                else:
                    self._drop()
            if self._registered is not None:
                self._tidy()

    def _tidy(self) -> None:
        """Delete the registrations of processes long gone (they cost the
        triggers' check a row each)."""
        try:
            with self._connection() as conn:
                conn.execute(self._q["wake_tidy"])
        except TenureError as exc:
            log.debug("could not delete expired wake-up registrations: %s", exc)

    def _remove(self) -> None:
        """:meth:`_drop`, at close, if no registration is stuck on the database."""
        if self._lock.acquire(timeout=CLOSE_WAIT):
            try:
                self._drop()
            finally:
                self._lock.release()


def _covered(topics: Topics, covers: Topics) -> bool:
    """Whether a registration of ``covers`` wakes a waiter on ``topics``."""
    if covers is None:
        return True
    return topics is not None and topics <= covers


def _union(wanted: Iterable[Topics]) -> Topics:
    """The topics of all idle waiters; ``None`` if one takes any."""
    topics: set[str] = set()
    for each in wanted:
        if each is None:
            return None
        topics |= each
    return frozenset(topics)
