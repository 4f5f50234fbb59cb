"""Group commit: concurrent enqueues of one process share a transaction.

A durable enqueue of one task is bounded by its commit, and a commit costs
about the same for one row as for ten (the log flush, the statement triggers,
the wake-up check). A web server enqueues from many threads at once; each
paying a commit of its own leaves the store's capacity on the table. So when a
caller finds another's write in flight, it queues its tasks instead of opening a
transaction of its own; when the write in flight ends, the first queued caller
writes every queued caller's tasks in one transaction, and each caller returns
only after that commit. A caller alone never waits: it writes at once, as
before.

Nothing acknowledged is lost and no caller is answered for another's fault:

- a refusal of the shared write (a duplicate id, say) wrote nothing, so each
  caller's tasks are written again on their own and every caller gets its own
  answer;
- a lost connection may have lost the commit or only its answer, so writing
  again could create tasks twice: every caller of that write gets
  ``StoreUnavailable``, as each would have alone, and nobody is told "created".

Only writes a caller could not tell from its own take part: on the store's own
connection, at the store's clock, and without unique locks (whose conflicts
reject items of one batch). Others are written directly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from tenure.errors import StoreUnavailable
from tenure.store.types import PreparedTask
from tenure.task import Task

GROUP_MAX_TASKS = 1000
"""A caller with more tasks than this writes them on its own: a shared write of
that size would make the small callers behind it wait for it."""


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
        if self.error is not None:
            raise self.error
        assert self.created is not None
        return self.created


class GroupCommit:
    """Writes callers' tasks through ``write``, one transaction at a time,
    each transaction holding every caller that arrived while the one before
    was being written."""

    def __init__(self, write: Callable[[list[PreparedTask]], list[Task]]) -> None:
        self._write = write
        self._lock = threading.Lock()
        self._queue: list[_Caller] = []
        self._writing = False

    @staticmethod
    def joinable(tasks: Sequence[PreparedTask]) -> bool:
        """Whether ``tasks`` may share a transaction with other callers'."""
        return len(tasks) <= GROUP_MAX_TASKS and all(task.unique is None for task in tasks)

    def create(self, tasks: list[PreparedTask]) -> list[Task]:
        """Write ``tasks`` (in one transaction, with other callers' or alone);
        return them as created, once committed."""
        caller = _Caller(tasks)
        with self._lock:
            self._queue.append(caller)
            caller.leads = not self._writing
            self._writing = True
        if not caller.leads:
            caller.ready.wait()
        if caller.leads:
            self._lead()
        return caller.answer()

    def _lead(self) -> None:
        """Write everything queued, then hand the lead to the first caller
        queued meanwhile (or give it up)."""
        with self._lock:
            group, self._queue = self._queue, []
        try:
            self._write_group(group)
        finally:
            for caller in group:
                if caller.created is None and caller.error is None:  # interrupted
                    caller.error = StoreUnavailable("the write was interrupted, unconfirmed")
            with self._lock:
                if self._queue:
                    self._queue[0].leads = True
                    self._queue[0].ready.set()
                else:
                    self._writing = False
            for caller in group:
                caller.ready.set()

    def _write_group(self, group: list[_Caller]) -> None:
        if len(group) == 1:
            self._write_alone(group[0])
            return
        try:
            created = self._write([task for caller in group for task in caller.tasks])
        except StoreUnavailable as exc:
            for caller in group:
                caller.error = StoreUnavailable(str(exc))
                caller.error.__cause__ = exc
        except Exception:
            for caller in group:
                self._write_alone(caller)
        else:
            start = 0
            for caller in group:
                caller.created = created[start : start + len(caller.tasks)]
                start += len(caller.tasks)

    def _write_alone(self, caller: _Caller) -> None:
        try:
            caller.created = self._write(caller.tasks)
        except Exception as exc:
            caller.error = exc
