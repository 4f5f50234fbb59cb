"""The event log and the observer's reports, as every store offers them.

Every transition is appended to the event log in the transaction that makes it;
followers read the log from a cursor (:meth:`EventLog.event_page`) and wait for
more (:meth:`EventLog.event_notify`). An observer run saves its result as its
query's latest report and appends a report event in the same transaction, so a
follower hears of a report only once it can be read.

Retention deletes old events. A follower resuming from a cursor older than the
newest event deleted may have lost history, so it is refused with
:class:`~tenure.errors.EventsPruned` rather than silently skipping what is gone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tenure import serializer
from tenure.errors import EventsPruned, InvalidInput
from tenure.store import cursor as cursors
from tenure.store import validate
from tenure.store.backend import Backend
from tenure.store.types import Event, EventPage, Report
from tenure.store.waking import Wakeups, notify_from_waits

MAX_REPORT_IDS = 10_000
"""Most task ids one report keeps (its total counts them all)."""


class EventLog(Backend):
    """The store's event log and reports (a part of :class:`~tenure.store.Store`)."""

    event_poll: float = 1.0
    """Seconds a follower waits between reads when nothing wakes it: a safety
    net for a notification lost while the store reconnected."""

    def event_list(self, *, after: str | None = None, limit: int = 1000) -> list[Event]:
        """The events after the cursor ``after`` (an earlier event's ``cursor``;
        ``None`` for the beginning), in the order a follower must see them.

        Every committed event is returned exactly once across pages, and an
        event is returned only once every transaction that could still write an
        event before it has ended: a follower that saves the last cursor it saw
        never skips an event whose transaction commits later. Event ids cannot
        promise that on PostgreSQL, where transactions commit out of id order,
        so an event becomes visible here when no transaction older than its own
        is still open (a long transaction anywhere on the server delays the log,
        it never loses it). A cursor is opaque: one not made by a store is
        refused with ``InvalidInput("after", …)``; one that points into history
        that retention deleted, with :class:`~tenure.errors.EventsPruned`.
        """
        return self.event_page(after=after, limit=limit).events

    def event_page(self, *, after: str | None = None, limit: int = 1000) -> EventPage:
        """:meth:`event_list`, saying also whether committed events wait behind
        a transaction still open (``held_back``: read again shortly)."""
        position = cursors.EVENT_START if after is None else cursors.event_position(after)
        page, pruned_to = self._event_list(position, validate.page_limit(limit))
        if after is not None and position < pruned_to:
            raise EventsPruned(after, cursors.event_cursor(*pruned_to))
        return page

    def event_tail(self, *, before: str | None = None, limit: int = 100) -> list[Event]:
        """The newest ``limit`` events before the cursor ``before`` (``None``: the
        newest listed so far), newest first. Following from the first one
        returned misses nothing that comes after it."""
        position = cursors.EVENT_END if before is None else cursors.event_position(before)
        return self._event_tail(position, validate.page_limit(limit))

    def event_wait(self, timeout: float) -> bool:
        """Block until events may have been appended since this thread's last
        wait, or ``timeout`` seconds pass; True when woken early.

        Stores that cannot tell just wait the timeout; followers poll."""
        time.sleep(validate.seconds(timeout, "timeout", allow_zero=True))
        return False

    def event_notify(self, wake: threading.Event) -> Wakeups:
        """Set ``wake`` whenever events may have been appended, until the
        returned :class:`~tenure.store.waking.Wakeups` is called. Once this
        returns, no later append goes unnoticed (short of a lost connection:
        followers still poll every :attr:`event_poll` seconds)."""
        if type(self).event_wait is EventLog.event_wait:
            return Wakeups(lambda: None)
        return notify_from_waits(self.event_wait, wake, "events")

    def lease_notify(self, wake: threading.Event) -> Wakeups:
        """Set ``wake`` whenever a running task may have been taken from its
        holder (cancelled, revoked), until the returned subscription is
        called. Every such taking appends an event, so by default this wakes
        as :meth:`event_notify` does; a store that can tell these takings
        apart (PostgreSQL) wakes for them alone. A holder then reads its
        leases (:meth:`~tenure.store.Store.leases_lost`)."""
        return self.event_notify(wake)

    def event_prune(
        self, older_than: float, *, limit: int = 1000, now: datetime | None = None
    ) -> int:
        """Delete up to ``limit`` events older than ``older_than`` seconds."""
        older_than = validate.seconds(older_than, "older_than", allow_zero=True)
        validate.moment(now, "now")
        return self._event_prune(older_than, validate.page_limit(limit), now)

    # -- the observer's reports ----------------------------------------------------

    def report_save(
        self,
        key: str,
        slot: datetime,
        *,
        owner: str,
        query: dict[str, Any],
        task_ids: Sequence[str],
        total: int,
    ) -> Report | None:
        """Save the result of the observer query ``key`` for its run scheduled at
        ``slot`` as the key's latest report, and append a report event with it.

        Nothing is saved (``None``) if a report for this slot or a later one is
        saved already: of two schedulers running the same slot, one reports."""
        report = Report(
            key=validate.text(key, "key"),
            slot=_moment(slot, "slot"),
            run_at=slot,  # the store sets the time it is saved
            owner=validate.text(owner, "owner"),
            query=_query(query),
            task_ids=tuple(validate.names(task_ids, "task_ids", "task ids")),
            total=validate.integer(total, "total", minimum=0),
        )
        if len(report.task_ids) > MAX_REPORT_IDS:
            raise InvalidInput("task_ids", f"at most {MAX_REPORT_IDS} ids are kept")
        return self._report_save(report)

    def report_get(self, key: str) -> Report | None:
        """The latest report of the query ``key``, if it has run."""
        return self._report_get(validate.text(key, "key"))

    def report_list(self) -> list[Report]:
        """The latest report of every query that has run, by key."""
        return self._report_list()

    def report_prune(self, older_than: float, *, now: datetime | None = None) -> int:
        """Delete the reports last saved more than ``older_than`` seconds ago (the
        queries no longer run); return how many."""
        older_than = validate.seconds(older_than, "older_than", allow_zero=True)
        validate.moment(now, "now")
        return self._report_prune(older_than, now)


def _moment(value: object, field: str) -> datetime:
    moment = validate.moment(value, field)
    if moment is None:
        raise InvalidInput(field, "a time is required")
    return moment


def _query(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput("query", "must be a dict of the query's filters")
    serializer.dumps(value, "query")  # JSON only, checked now
    return value
