"""The store contract every backend fulfils: tasks, leases and their supervision.

:class:`Store` holds what is the same for every backend — validation at the
boundary, single-item operations expressed through the batch ones, cursors — and
leaves to each backend only how rows are stored (the ``_``-prefixed abstract
methods of :class:`~tenure.store.backend.Backend`). Why a write changed nothing
is explained in one place for every backend: :mod:`tenure.store.refusals`.

Fencing: a reservation grants a :class:`Lease` whose token is the task's
``record_ver`` right after the reservation, so every later reservation carries a
larger token. A holder's write succeeds only while the task is running under that
very token; revoke and cancel clear the token, so a holder that was paused, lost
its network or was presumed dead changes nothing when it comes back.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Collection, Sequence
from datetime import datetime
from functools import partial
from typing import Any

from tenure import serializer
from tenure.errors import ConfigError, DuplicateTask, InvalidInput, TenureError
from tenure.store import cursor as cursors
from tenure.store import validate
from tenure.store.backend import Positioned
from tenure.store.eventlog import EventLog
from tenure.store.flowcontrol import FlowControl
from tenure.store.flows import Flows
from tenure.store.grouping import GroupCommit
from tenure.store.operating import Operating
from tenure.store.presence import Presence
from tenure.store.refusals import Answer, briefly, raise_if_refused, refuse_shared_locks
from tenure.store.schedules import Schedules
from tenure.store.types import (
    Completion,
    Failure,
    NewTask,
    Page,
    PreparedTask,
    ReserveParams,
    StateOutcome,
    TaskFilter,
    TaskState,
    UniqueLock,
)
from tenure.store.waking import Wakeups, notify_from_waits
from tenure.task import Lease, Status, Task, TaskError

log = logging.getLogger("tenure.store")

FINISHED_STATUSES = frozenset({Status.DONE, Status.FAILED, Status.CANCELLED})
"""The statuses whose tasks retention may delete."""

DEFAULT_MAX_PAYLOAD_BYTES = 1 << 20
"""Largest JSON payload or result accepted, in bytes (1 MiB)."""


class Store(EventLog, Operating, Presence, Flows, Schedules, FlowControl):
    """A place where tasks live. Thread-safe; share one per process."""

    def __init__(self, *, max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES) -> None:
        self.max_payload_bytes = validate.integer(max_payload_bytes, "max_payload_bytes", minimum=1)
        self._grouped = GroupCommit(lambda batch: self._task_create_many(batch, None, None))

    # -- creating ---------------------------------------------------------------

    def task_create(
        self, task: NewTask, *, now: datetime | None = None, connection: Any = None
    ) -> Task:
        """Create one task; ``DuplicateTask`` if its id exists."""
        return self.task_create_many([task], now=now, connection=connection)[0]

    def task_create_many(
        self, tasks: Sequence[NewTask], *, now: datetime | None = None, connection: Any = None
    ) -> list[Task]:
        """Create all of ``tasks`` in one transaction, or none of them.

        With ``connection`` (a driver connection of the caller's, inside its own
        transaction) the tasks are written in that transaction: they exist if and
        only if the caller commits.
        """
        prepared = self._prepare_many(tasks, now)
        if not prepared:
            return []
        if connection is None and now is None and GroupCommit.joinable(tasks):
            return self._grouped.create(prepared)
        return self._task_create_many(prepared, now, connection)

    async def atask_create_many(
        self, tasks: Sequence[NewTask], *, connection: Any, now: datetime | None = None
    ) -> list[Task]:
        """:meth:`task_create_many` on an async driver connection of the caller's
        (a ``psycopg.AsyncConnection`` for PostgreSQL), awaited on its event loop:
        written in the caller's transaction, the tasks exist if and only if the
        caller commits. Checked as :meth:`task_create_many` checks them, before
        anything is sent. A store without an async driver (SQLite) raises
        ``ConfigError``; so does a missing ``connection``.
        """
        if connection is None:
            raise ConfigError(
                "atask_create_many writes on the caller's async connection, and none was "
                "given; without one, call task_create_many (from a thread in async code)"
            )
        prepared = self._prepare_many(tasks, now)
        return await self._atask_create_many(prepared, now, connection) if prepared else []

    def _prepare_many(self, tasks: Sequence[NewTask], now: datetime | None) -> list[PreparedTask]:
        """``tasks`` checked and encoded, as every create stores them."""
        prepared: list[PreparedTask] = []
        for index, new in enumerate(tasks):
            like = (tasks[index - 1], prepared[-1]) if index else None
            prepared.append(self._prepare(new, index, len(tasks), like))
        seen: set[str] = set()
        for task in prepared:
            if task.id in seen:
                raise DuplicateTask(task.id)
            seen.add(task.id)
        validate.moment(now, "now")
        refuse_shared_locks(prepared)
        return prepared

    def _prepare(
        self,
        task: NewTask,
        index: int,
        count: int,
        like: tuple[NewTask, PreparedTask] | None = None,
    ) -> PreparedTask:
        try:
            return validate.prepare(task, self.max_payload_bytes, like)
        except InvalidInput as exc:
            if count == 1:
                raise
            raise InvalidInput(f"tasks[{index}].{exc.field}", exc.message) from None

    # -- unique locks -------------------------------------------------------------

    def unique_lock_list(
        self, *, limit: int = 1000, now: datetime | None = None
    ) -> list[UniqueLock]:
        """The unique locks held now (expired ones are free, so not listed)."""
        validate.moment(now, "now")
        return self._unique_lock_list(validate.page_limit(limit), now)

    def unique_lock_prune(self, *, now: datetime | None = None) -> int:
        """Delete the locks past their time to live (the scheduler's safety net
        for a lock its task never gave up); how many went."""
        validate.moment(now, "now")
        return self._unique_lock_prune(now)

    # -- reading ------------------------------------------------------------------

    def task_get(self, task_id: str) -> Task | None:
        """The task with ``task_id``, or ``None``."""
        return self._task_get(validate.text(task_id, "task_id"))

    def task_list_group(self, group_id: str) -> list[Task]:
        """Every task of a group, oldest first."""
        return self._task_list_group(validate.text(group_id, "group_id"))

    def task_list(
        self,
        filters: TaskFilter | None = None,
        *,
        cursor: str | None = None,
        limit: int = 100,
        newest_first: bool = False,
        scan: int | None = None,
    ) -> Page:
        """One page of tasks matching ``filters``, oldest first (or newest first).
        The cursor keeps its place while tasks arrive: none is skipped or shown
        twice.

        ``scan`` bounds the work of the page, so that a filter few tasks match
        answers as fast on a million tasks as on a thousand: at most ``scan``
        tasks past the cursor are examined, in the listing's order, among those
        of the status and group asked for (what an index narrows to); the other
        filters are applied to those. The page may then hold fewer than
        ``limit`` tasks, even none, and still have a cursor, which resumes after
        the last task examined: only a page without a cursor says that no task
        is left. A cursor serves the same filters and order, whatever ``scan``.
        """
        filters = validate.task_filter(filters or TaskFilter())
        order = "newest" if newest_first else "list"
        scope = cursors.scope_of([order, _filter_key(filters)])
        after = 0 if cursor is None else cursors.decode(cursor, scope)
        limit = validate.page_limit(limit)
        scan = None if scan is None else validate.scan(scan)
        listed = self._task_list(filters, after, limit, newest_first, scan)
        return _page(listed.rows, limit, scope, listed.examined_to)

    def task_list_leased(
        self, *, topics: Sequence[str] | None = None, cursor: str | None = None, limit: int = 1000
    ) -> Page:
        """One page of running and snoozed tasks: what the supervisor watches."""
        topics = validate.topic_list(topics)
        scope = cursors.scope_of(["leased", topics])
        after = 0 if cursor is None else cursors.decode(cursor, scope)
        limit = validate.page_limit(limit)
        return _page(self._task_list_leased(topics, after, limit), limit, scope)

    # -- holding leases -----------------------------------------------------------

    def task_reserve(self, params: ReserveParams) -> list[Task]:
        """Lease up to ``params.limit`` runnable tasks: priority first, then oldest."""
        return self._task_reserve(validate.reserve_params(params))

    def lease_extend(
        self, lease: Lease, lease_seconds: float, *, now: datetime | None = None
    ) -> Task:
        """Extend one lease; raises the refusal if it was not extended."""
        return raise_if_refused(self._extend([lease], lease_seconds, now, brief=False)[0])

    def lease_extend_many(
        self, leases: Sequence[Lease], lease_seconds: float, *, now: datetime | None = None
    ) -> list[StateOutcome]:
        """Extend many leases in one round trip; each item answers alone, with the
        task's new state or the refusal."""
        return briefly(self._extend(leases, lease_seconds, now, brief=True))

    def leases_lost(self, leases: Sequence[Lease]) -> list[str]:
        """The ids, among ``leases``, of the tasks no longer running under their
        lease: cancelled, revoked or ended since. A read by id alone, so a
        holder can afford it whenever it hears that some lease was taken
        (:meth:`lease_notify`); the fenced writes still decide."""
        checked = validate.leases(leases, None)
        return self._leases_lost(checked) if checked else []

    def _extend(
        self, leases: Sequence[Lease], lease_seconds: float, now: datetime | None, brief: bool
    ) -> list[Answer]:
        lease_seconds = validate.seconds(lease_seconds, "lease_seconds")
        checked = validate.leases(leases, now)
        return self._lease_extend_many(checked, lease_seconds, now, brief) if checked else []

    def task_complete(
        self,
        lease: Lease,
        result: Any = None,
        *,
        now: datetime | None = None,
        connection: Any = None,
    ) -> Task:
        """Mark a held task done with ``result``. With ``connection`` (a driver
        connection of the caller's, to this store's database, in an open
        transaction) the ending is written in that transaction: it commits with
        the caller's own writes, or not at all; a refusal is raised, and the
        caller's transaction must then roll back."""
        if connection is None:
            completion = Completion(lease, result)
            return raise_if_refused(self._complete([completion], now, brief=False)[0])
        validate.leases([lease], now)
        encoded = self._result_json(Completion(lease, result))
        return raise_if_refused(self._task_complete_in(lease, encoded, now, connection))

    def task_complete_many(
        self, completions: Sequence[Completion], *, now: datetime | None = None
    ) -> list[StateOutcome]:
        """Complete many held tasks in one round trip; each item answers with the
        task's new state or the refusal (no payload travels back)."""
        return briefly(self._complete(completions, now, brief=True))

    def _complete(
        self, completions: Sequence[Completion], now: datetime | None, brief: bool
    ) -> list[Answer]:
        validate.leases([c.lease for c in completions], now)
        encoded = [(c.lease, self._result_json(c)) for c in completions]
        return self._task_complete_many(encoded, now, brief) if encoded else []

    def _result_json(self, completion: Completion) -> str:
        """The completion's result as JSON: encoded once, by whoever checked it."""
        encoded = completion.encoded
        if encoded is None:
            return serializer.dumps(completion.result, "result", self.max_payload_bytes)
        size = getattr(encoded, "size", None)
        if not isinstance(encoded, serializer.JsonText) or not isinstance(size, int):
            raise InvalidInput("encoded", "must be what tenure.serializer.dumps returned")
        serializer.check_size(size, "result", self.max_payload_bytes)
        return encoded

    def task_fail(
        self,
        lease: Lease,
        error: TaskError,
        *,
        retry_in: float | None = None,
        priority_step: int = 1,
        now: datetime | None = None,
    ) -> Task:
        """Report a failed attempt: back to pending after ``retry_in``, or failed."""
        failure = Failure(lease, error, retry_in, priority_step)
        return raise_if_refused(self._fail([failure], now, brief=False)[0])

    def task_fail_many(
        self, failures: Sequence[Failure], *, now: datetime | None = None
    ) -> list[StateOutcome]:
        """Report many failed attempts in one round trip; each item answers with the
        task's new state (pending for a retry, failed) or the refusal."""
        return briefly(self._fail(failures, now, brief=True))

    def _fail(self, failures: Sequence[Failure], now: datetime | None, brief: bool) -> list[Answer]:
        validate.leases([f.lease for f in failures], now)
        checked = [
            Failure(
                f.lease,
                validate.task_error(f.error),
                None
                if f.retry_in is None
                else validate.seconds(f.retry_in, "retry_in", allow_zero=True),
                validate.integer(
                    f.priority_step, "priority_step", minimum=0, bounds=validate.INT32
                ),
            )
            for f in failures
        ]
        return self._task_fail_many(checked, now, brief) if checked else []

    def task_snooze(self, lease: Lease, seconds: float, *, now: datetime | None = None) -> Task:
        """Pause a held task for ``seconds``; the supervisor wakes it to pending."""
        seconds = validate.seconds(seconds, "seconds", allow_zero=True)
        validate.leases([lease], now)
        return raise_if_refused(self._task_snooze(lease, seconds, now))

    def task_progress(
        self,
        lease: Lease,
        progress: float,
        note: str | None = None,
        *,
        now: datetime | None = None,
    ) -> TaskState:
        """Record how far a held, running task got: ``progress`` from 0 to 1 and
        an optional ``note`` ("step 2 of 5"). Fenced like every holder write:
        refused once the lease is gone. Not a transition: no event is written."""
        validate.leases([lease], now)
        progress = validate.number(progress, "progress", 0.0, 1.0)
        note = validate.optional_text(note, "note", max_length=validate.MAX_PROGRESS_NOTE)
        answer = self._task_progress(lease, progress, note, now)
        if isinstance(answer, TenureError):
            raise answer
        return answer if isinstance(answer, TaskState) else TaskState.of(answer)

    def task_cancel_held(
        self, lease: Lease, error: TaskError, *, now: datetime | None = None
    ) -> Task:
        """End a held task cancelled, whatever attempts remain, with ``error``
        saying why (``raise tenure.Cancel(reason)`` in the task). Fenced like
        every holder write: refused once the lease is gone."""
        validate.leases([lease], now)
        encoded = json.dumps(validate.task_error(error).stored())
        return raise_if_refused(self._task_cancel_held(lease, encoded, now))

    def task_release(self, lease: Lease, *, now: datetime | None = None) -> Task:
        """Give a held task back to pending at once, not counting the attempt
        (graceful shutdown)."""
        validate.leases([lease], now)
        return raise_if_refused(self._task_release(lease, now))

    # -- supervising and administering --------------------------------------------

    def task_revoke(
        self, task_id: str, record_ver: int, *, now: datetime | None = None
    ) -> Task | None:
        """Take a running or snoozed task back if it is still at ``record_ver``.

        Compare-and-set: returns the task as written, or ``None`` when the task
        changed since (its holder is alive) or is no longer leased. A running
        task whose attempts are used up goes to failed instead of pending.
        """
        validate.text(task_id, "task_id")
        validate.integer(record_ver, "record_ver", minimum=1)
        validate.moment(now, "now")
        return self._task_revoke(task_id, record_ver, now)

    def task_cancel(self, task_id: str, *, now: datetime | None = None) -> Task:
        """Cancel a pending, running or snoozed task; its lease, if any, is lost."""
        validate.moment(now, "now")
        return self._admin_transition(validate.text(task_id, "task_id"), Status.CANCELLED, now)

    def task_retry(self, task_id: str, *, now: datetime | None = None) -> Task:
        """Send a failed or cancelled task back to pending with fresh attempts."""
        validate.moment(now, "now")
        return self._admin_transition(validate.text(task_id, "task_id"), Status.PENDING, now)

    def task_wait(self, topics: Sequence[str] | None, timeout: float) -> bool:
        """Block until tasks may have been created on ``topics`` (``None``: any),
        or ``timeout`` seconds pass. True when woken early by a notification.

        Stores without notifications just wait the timeout; callers poll.
        """
        time.sleep(validate.seconds(timeout, "timeout", allow_zero=True))
        return False

    def task_notify(self, topics: Sequence[str] | None, wake: threading.Event) -> Wakeups:
        """Set ``wake`` whenever tasks may have become pending on ``topics``
        (``None``: any), until the returned subscription is called. The
        subscriber tells it when it is idle and when busy (see
        :class:`~tenure.store.waking.Wakeups`).

        By default a thread follows :meth:`task_wait`; a store that is told of
        new tasks (PostgreSQL) sets ``wake`` from where it hears of them, one
        thread hand-off fewer between an enqueue and its start. Stores that
        are never told do nothing: their callers poll.
        """
        if type(self).task_wait is Store.task_wait:
            return Wakeups(lambda: None)
        return notify_from_waits(partial(self.task_wait, topics), wake, "new tasks")

    # -- counting, the clock, retention --------------------------------------------

    def task_count(self, filters: TaskFilter | None = None) -> int:
        """How many tasks match ``filters``."""
        return self._task_count(validate.task_filter(filters or TaskFilter()))

    def clock_now(self) -> datetime:
        """The store's own clock: the database server's for PostgreSQL, this
        process's for SQLite. Schedules shared by many processes read it, so they
        agree on what time it is."""
        return self._clock_now()

    def task_prune(
        self,
        older_than: float,
        *,
        limit: int = 1000,
        now: datetime | None = None,
        statuses: Collection[Status | str] = FINISHED_STATUSES,
    ) -> int:
        """Delete up to ``limit`` tasks in ``statuses`` (done, failed and cancelled
        by default; only those) that finished more than ``older_than`` seconds
        ago; return how many. Up to ``limit`` gates that opened or broke as
        long ago go too (``flow_create``)."""
        older_than = validate.seconds(older_than, "older_than", allow_zero=True)
        validate.moment(now, "now")
        chosen = sorted({validate.status(s, "statuses").value for s in statuses})
        if not chosen or not set(chosen) <= FINISHED_STATUSES:
            raise InvalidInput("statuses", "only done, failed or cancelled tasks are pruned")
        return self._task_prune(older_than, validate.page_limit(limit), now, chosen)

    def tally_fold(self, *, compact: bool = False) -> None:
        """Fold the tallies' delta rows, and with ``compact`` the minutes older
        than a day into the totals (the scheduler calls it each cycle, and
        compacting each prune). Stores whose tallies need no folding (SQLite,
        which counts its tables when asked and keeps only totals) do nothing."""

    def statistics_refresh(self) -> list[str]:
        """Refresh the planner's statistics of the tables that changed much since
        they were last gathered, where nothing else does it; the tables done.

        A queue's tables swing from empty to millions of rows and back; plans
        chosen on stale statistics can read every pending row to take a few.
        PostgreSQL's autovacuum keeps them fresh; where it is turned off, the
        scheduler calls this every prune cycle. Stores without a planner that
        needs it do nothing.
        """
        return []

    def close(self) -> None:
        """Release connections and files (a store without any need not override)."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _filter_key(filters: TaskFilter) -> list[object]:
    return [
        filters.topic,
        filters.sub_topic,
        filters.status,
        filters.name,
        filters.group_id,
        filters.created_from,
        filters.created_to,
        filters.text,
    ]


def _page(rows: list[Positioned], limit: int, scope: str, examined_to: int | None = None) -> Page:
    """A full page resumes after its last task; a short one after the last task
    its scan examined, if it stopped before the end (``examined_to``)."""
    tasks = [task for _, task in rows]
    if len(rows) >= limit:
        return Page(tasks, cursors.encode(rows[-1][0], scope))
    if examined_to is not None:
        return Page(tasks, cursors.encode(examined_to, scope))
    return Page(tasks, None)
