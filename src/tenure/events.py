"""Following the event log from anywhere: a generator, a thread, an async iterator.

Every transition is appended to the store's event log in the transaction that
makes it, and an observer's report in the transaction that saves it. A follower
reads the log from a cursor and waits for more: PostgreSQL's LISTEN/NOTIFY wakes
it as soon as new events commit, SQLite's change counter is watched every couple
of milliseconds, and either way the follower also reads every
``store.event_poll`` seconds, in case a notification was lost.

The guarantee: every committed event is delivered, in commit order (so a task's
events arrive in the order they happened), exactly once within one follow and
at least once across restarts for a follower that saves the ``cursor`` of the
last event it handled and resumes after it. A cursor that retention has overtaken
is refused with :class:`~tenure.errors.EventsPruned`, never silently skipped.

Filters (topics, names, kinds, task ids) are applied here, after reading: the
cursor still moves past the events they leave out.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Collection, Iterator
from dataclasses import dataclass

from tenure.checks import names as check_names
from tenure.errors import InvalidInput, StoreUnavailable
from tenure.store import Store
from tenure.store.types import EVENT_KINDS, Event
from tenure.store.waking import LoopWake, registered_async

log = logging.getLogger("tenure.events")

HELD_BACK_PAUSES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05)
"""Seconds between reads while committed events wait behind an open transaction
that may never notify (one that wrote no event): short, then shorter no more."""

READ_BATCH = 500
"""Events read per round trip."""

UNAVAILABLE_PAUSE = 1.0
"""Seconds a follower waits before reading again while the store is unreachable."""

TAIL_SCAN = 100_000
"""Most events read backwards to find the last few that match a tail's filters."""


@dataclass(frozen=True, slots=True)
class EventFilter:
    """Which events a follower wants; ``None`` means any."""

    topics: frozenset[str] | None = None
    names: frozenset[str] | None = None
    kinds: frozenset[str] | None = None
    task_ids: frozenset[str] | None = None

    @classmethod
    def of(
        cls,
        topics: Collection[str] | None = None,
        names: Collection[str] | None = None,
        kinds: Collection[str] | None = None,
        task_ids: Collection[str] | None = None,
    ) -> EventFilter:
        """A filter from caller input, checked: each is a collection, never a
        bare string, and kinds are among :data:`~tenure.store.types.EVENT_KINDS`."""
        wanted = cls(
            _optional_set(topics, "topics"),
            _optional_set(names, "names"),
            _optional_set(kinds, "kinds"),
            _optional_set(task_ids, "task_ids"),
        )
        unknown = sorted((wanted.kinds or frozenset()) - EVENT_KINDS)
        if unknown:
            choices = ", ".join(sorted(EVENT_KINDS))
            raise InvalidInput("kinds", f"unknown kind {unknown[0]!r}; one of {choices}")
        return wanted

    def matches(self, event: Event) -> bool:
        return (
            (self.topics is None or event.topic in self.topics)
            and (self.names is None or event.name in self.names)
            and (self.kinds is None or event.kind in self.kinds)
            and (self.task_ids is None or event.task_id in self.task_ids)
        )


def _optional_set(values: Collection[str] | None, field: str) -> frozenset[str] | None:
    return None if values is None else frozenset(check_names(values, field, field))


class _Reader:
    """A position in the log and the next read from it: one place for the
    rules that the thread, the generator and the async iterator share."""

    def __init__(
        self, store: Store, after: str | None, wanted: EventFilter, *, patient: bool = True
    ) -> None:
        self.store = store
        self.cursor = after
        self.wanted = wanted
        self.patient = patient
        """Whether an unreachable store is waited for (a follower) or raised (a listing)."""
        self._held = 0

    def read(self) -> tuple[list[Event], float]:
        """The next events that match, and how long to wait for news before
        reading again (0: read again at once)."""
        try:
            page = self.store.event_page(after=self.cursor, limit=READ_BATCH)
        except StoreUnavailable as exc:
            if not self.patient:
                raise
            log.warning("following events: %s; reading again in %.0f s", exc, UNAVAILABLE_PAUSE)
            return [], UNAVAILABLE_PAUSE
        if page.events:
            self.cursor = page.events[-1].cursor
        matching = [event for event in page.events if self.wanted.matches(event)]
        if len(page.events) == READ_BATCH:
            return matching, 0.0
        if page.held_back:
            self._held += 1
            return matching, HELD_BACK_PAUSES[min(self._held, len(HELD_BACK_PAUSES)) - 1]
        self._held = 0
        return matching, self.store.event_poll


class Subscription:
    """A callback run for each event on a thread of its own (see
    :meth:`Events.subscribe`). ``cursor`` is that of the last event handed to
    the callback: save it to resume after a restart."""

    def __init__(self, events: Events, callback: Callable[[Event], object]) -> None:
        self.cursor: str | None = None
        self.error: BaseException | None = None
        """Why the subscription ended by itself (a pruned cursor, a closed store)."""
        self._callback = callback
        self._events = events
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, after: str | None, wanted: EventFilter) -> Subscription:
        self.cursor = after
        self._thread = threading.Thread(
            target=self._run, args=(after, wanted), name="tenure-subscription", daemon=True
        )
        self._thread.start()
        return self

    def _run(self, after: str | None, wanted: EventFilter) -> None:
        try:
            for event in self._events._follow(after, wanted, self._stop, self._wake):
                try:
                    self._callback(event)
                except Exception:
                    log.exception("event subscriber failed on %s; going on", event.cursor)
                self.cursor = event.cursor
        except Exception as exc:
            self.error = exc
            log.error("event subscription ended: %s", exc)

    def stop(self, timeout: float | None = None) -> None:
        """Stop after the callback running now, if any, returns."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class Events:
    """The event log of an App's store: ``app.events``."""

    def __init__(self, store: Callable[[], Store]) -> None:
        self._store = store

    def follow(
        self,
        after: str | None = None,
        *,
        topics: Collection[str] | None = None,
        names: Collection[str] | None = None,
        kinds: Collection[str] | None = None,
        task_ids: Collection[str] | None = None,
    ) -> Iterator[Event]:
        """Yield the events after the cursor ``after`` (``None``: from the
        oldest kept) as they commit, blocking while there are none; forever,
        until the caller stops iterating. The filters are checked now."""
        wanted = EventFilter.of(topics, names, kinds, task_ids)
        return self._follow(after, wanted, threading.Event(), threading.Event())

    def _follow(
        self, after: str | None, wanted: EventFilter, stop: threading.Event, wake: threading.Event
    ) -> Iterator[Event]:
        store = self._store()
        reader = _Reader(store, after, wanted)
        unsubscribe = store.event_notify(wake)
        try:
            while not stop.is_set():
                wake.clear()  # before the read: news from here on wakes the wait below
                if stop.is_set():  # stopped just before the clear: its wake-up was cleared
                    return
                events, pause = reader.read()
                for event in events:
                    if stop.is_set():
                        return
                    yield event
                if pause:
                    wake.wait(pause)
        finally:
            unsubscribe()

    async def afollow(
        self,
        after: str | None = None,
        *,
        topics: Collection[str] | None = None,
        names: Collection[str] | None = None,
        kinds: Collection[str] | None = None,
        task_ids: Collection[str] | None = None,
    ) -> AsyncIterator[Event]:
        """:meth:`follow` for async code: ``async for event in app.events.afollow()``.
        Reads run on the default executor, so the event loop never blocks; waits
        are the loop's own, so a thousand idle followers hold no thread."""
        wanted = EventFilter.of(topics, names, kinds, task_ids)
        store, wake = self._store(), LoopWake(asyncio.get_running_loop())
        reader = _Reader(store, after, wanted)
        unsubscribe = await registered_async(store.event_notify, wake)
        try:
            while True:
                wake.clear()
                events, pause = await asyncio.to_thread(reader.read)
                for event in events:
                    yield event
                if pause:
                    await wake.wait_async(pause)
        finally:
            unsubscribe()

    def subscribe(
        self,
        callback: Callable[[Event], object],
        after: str | None = None,
        *,
        topics: Collection[str] | None = None,
        names: Collection[str] | None = None,
        kinds: Collection[str] | None = None,
        task_ids: Collection[str] | None = None,
    ) -> Subscription:
        """Call ``callback(event)`` for each event after ``after``, one at a time,
        on a thread, until :meth:`Subscription.stop`. A callback that raises is
        logged and the next event delivered."""
        wanted = EventFilter.of(topics, names, kinds, task_ids)
        return Subscription(self, callback).start(after, wanted)

    def page(
        self,
        after: str | None = None,
        *,
        limit: int = 100,
        topics: Collection[str] | None = None,
        names: Collection[str] | None = None,
        kinds: Collection[str] | None = None,
        task_ids: Collection[str] | None = None,
    ) -> tuple[list[Event], str | None]:
        """Up to ``limit`` matching events after ``after``, without waiting, and
        the cursor to resume from (past the events the filters left out)."""
        wanted = EventFilter.of(topics, names, kinds, task_ids)
        reader = _Reader(self._store(), after, wanted, patient=False)
        found: list[Event] = []
        while len(found) < limit:
            events, pause = reader.read()
            found.extend(events)
            if pause:
                break
        if len(found) > limit:
            return found[:limit], found[limit - 1].cursor
        return found, reader.cursor

    def tail(
        self,
        limit: int = 20,
        *,
        topics: Collection[str] | None = None,
        names: Collection[str] | None = None,
        kinds: Collection[str] | None = None,
        task_ids: Collection[str] | None = None,
    ) -> tuple[list[Event], str | None]:
        """The newest ``limit`` matching events, oldest first (looking back at
        most ``TAIL_SCAN`` events), and the cursor to follow on from: that of the
        newest event listed so far, matching or not."""
        wanted = EventFilter.of(topics, names, kinds, task_ids)
        store = self._store()
        found: list[Event] = []
        before: str | None = None
        head: str | None = None
        for _ in range(TAIL_SCAN // READ_BATCH):
            page = store.event_tail(before=before, limit=READ_BATCH)
            if not page:
                break
            head = head or page[0].cursor
            found.extend(event for event in page if wanted.matches(event))
            before = page[-1].cursor
            if len(found) >= limit or len(page) < READ_BATCH:
                break
        return list(reversed(found[:limit])), head
