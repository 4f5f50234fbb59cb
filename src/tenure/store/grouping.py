"""Group commit: concurrent enqueues of one process share a transaction.

A durable enqueue of one task is bounded by its commit, and a commit costs
about the same for one row as for ten (the log flush, the statement triggers,
the wake-up check). A web server enqueues from many threads at once; each
paying a commit of its own leaves the store's capacity on the table. So when a
caller finds another's write in flight, it queues its tasks instead of opening a
transaction of its own; when the write in flight ends, the first queued caller
writes the queued callers' tasks in one transaction, and each caller returns
only after that commit. A caller alone never waits: it writes at once, as
before.

Only writes that nothing of one caller's can refuse take part: on the store's
own connection, at the store's clock, with ids tenure chose (a caller's own
id could be a duplicate, or wait on a row another transaction of the caller's
holds), and without unique locks (whose conflicts reject items of a batch).
Others are written directly. So a shared write fails only as a whole (a lost
connection, say, which may have lost the commit or only its answer): every
caller in it gets the error, as it would have alone, and nothing is written
again, which could create tasks twice.
"""

from __future__ import annotations

import copy
import os
import threading
import weakref
from collections.abc import Callable, Sequence

from tenure.errors import StoreUnavailable
from tenure.ids import NewId
from tenure.store.types import NewTask, PreparedTask
from tenure.task import Task

GROUP_MAX_TASKS = 1000
"""The most tasks one shared write holds. A caller with more writes them on its
own: a write of that size would make the small callers behind it wait for it."""


class _Caller:
    """One caller's tasks, and what became of them."""

    __slots__ = ("created", "error", "leads", "ready", "tasks")

    def __init__(self, tasks: list[PreparedTask]) -> None:
        self.tasks = tasks
        self.ready = threading.Event()
        self.leads = False
        self.created: list[Task] | None = None
        self.error: BaseException | None = None

    def answer(self) -> list[Task]:
        """The tasks as created, or the error that is this caller's."""
        if self.error is not None:
            raise self.error
        assert self.created is not None
        return self.created


class GroupCommit:
    """Writes callers' tasks through ``write``, one transaction at a time,
    each transaction holding the callers that arrived while the one before
    was being written."""

    def __init__(self, write: Callable[[list[PreparedTask]], list[Task]]) -> None:
        self._write = write
        self._reset()
        _ALL.add(self)

    def _reset(self) -> None:
        """Start empty (also in a child process after ``fork``, where the
        callers a parent's threads queued do not exist)."""
        self._lock = threading.Lock()
        self._queue: list[_Caller] = []
        self._writing = False
        self._leader: int | None = None

    @staticmethod
    def joinable(tasks: Sequence[NewTask]) -> bool:
        """Whether ``tasks`` may share a transaction with other callers'."""
        return len(tasks) <= GROUP_MAX_TASKS and all(
            (task.id is None or isinstance(task.id, NewId)) and task.unique is None
            for task in tasks
        )

    def create(self, tasks: list[PreparedTask]) -> list[Task]:
        """Write ``tasks`` (in one transaction, with other callers' or alone);
        return them as created, once committed."""
        me = threading.get_ident()
        if self._leader == me:  # re-entered (a signal handler)
            return self._write(tasks)
        alone = False
        try:
            with self._lock:
                alone = not self._writing
                self._writing = True
                if alone:  # no write in flight: the lead is this caller's, no queue
                    self._leader = me
            if alone:
                return self._write(tasks)
        finally:
            if alone:
                self._hand_on(me)
        return self._join(tasks)

    def _join(self, tasks: list[PreparedTask]) -> list[Task]:
        """Queue ``tasks`` behind the write in flight; write them with the
        others queued if the lead comes to this caller."""
        caller = _Caller(tasks)
        try:
            with self._lock:
                self._queue.append(caller)
                caller.leads = not self._writing
                self._writing = True
            if not caller.leads:
                caller.ready.wait()
        except BaseException:  # interrupted before its write began: withdraw
            self._withdraw(caller)
            raise
        if caller.leads:
            self._lead()
        return caller.answer()

    def _withdraw(self, caller: _Caller) -> None:
        """Take back ``caller``'s tasks if no write has taken them yet, and
        pass on the lead if it had been given it."""
        with self._lock:
            if caller in self._queue:
                self._queue.remove(caller)
            if caller.leads:
                self._pass_lead()

    def _pass_lead(self) -> None:
        """Give the lead to the first caller queued, or give it up (lock held)."""
        if self._queue:
            self._queue[0].leads = True
            self._queue[0].ready.set()
        else:
            self._writing = False

    def _lead(self) -> None:
        """Write the callers queued (up to :data:`GROUP_MAX_TASKS` tasks), then
        pass on the lead."""
        group: list[_Caller] = []
        me = threading.get_ident()
        try:
            with self._lock:
                self._leader = me
                group = self._take()
            self._write_group(group)
        finally:
            for caller in group:
                if caller.created is None and caller.error is None:  # interrupted
                    caller.error = StoreUnavailable("the write was interrupted, unconfirmed")
                caller.ready.set()
            self._hand_on(me)

    def _hand_on(self, me: int) -> None:
        """Pass on the lead, still this thread's until it is passed: a signal
        handler that enqueues meanwhile writes at once, as inside the write,
        instead of queueing behind its own thread or waiting on the lock."""
        with self._lock:
            self._pass_lead()
            if self._leader == me:
                self._leader = None

    def _take(self) -> list[_Caller]:
        """The callers of the next write, in the order they came (lock held)."""
        count = size = 0
        for caller in self._queue:
            if count and size + len(caller.tasks) > GROUP_MAX_TASKS:
                break
            count, size = count + 1, size + len(caller.tasks)
        group, self._queue = self._queue[:count], self._queue[count:]
        return group

    def _write_group(self, group: list[_Caller]) -> None:
        """Write ``group`` in one transaction; a failure is every caller's (a
        copy each when there are several, so that none raises another's)."""
        try:
            created = self._write([task for caller in group for task in caller.tasks])
        except Exception as exc:
            for caller in group:
                caller.error = exc if len(group) == 1 else _copy_of(exc)
            return
        start = 0
        for caller in group:
            caller.created = created[start : start + len(caller.tasks)]
            start += len(caller.tasks)


def _copy_of(exc: Exception) -> Exception:
    """``exc`` for one more caller (each raises its own, caused by the shared one)."""
    try:
        mine = copy.copy(exc)
    except Exception:  # an error that cannot be rebuilt from its args
        return exc
    mine.__cause__ = exc
    return mine


_ALL: weakref.WeakSet[GroupCommit] = weakref.WeakSet()


def _after_fork() -> None:
    for group in list(_ALL):
        group._reset()


os.register_at_fork(after_in_child=_after_fork)
