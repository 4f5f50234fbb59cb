"""Run an App's queued tasks in the calling thread: a worker without processes or
threads, for tests.

Each task goes the way a worker takes it: reserved under a lease, its arguments
decoded from the stored JSON, run inside the App's middleware, its result checked
and encoded, its ending written fenced by the lease, the log line and the hooks
told. So a test sees what production would, serialization mistakes included.

Tasks scheduled for later (a delay, a retry's backoff, a snooze) run too, unless
told otherwise: when nothing is due, the clock handed to the store jumps to the
next task's time, so retries and snoozes finish without waiting and the stored
timings still read in order. A task's timeout is not enforced here (nothing can
stop a function running in the caller's own thread).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from tenure.control import Link
from tenure.errors import InvalidInput, StoreUnavailable, TenureError
from tenure.function import ENQUEUE_CLOCK
from tenure.store import Completion, ReserveParams, Store, TaskFilter
from tenure.store.types import StateOutcome, TaskState
from tenure.task import Lease, Status, Task
from tenure.worker.completer import failure_of, settle_own
from tenure.worker.held import Held
from tenure.worker.loops import ThreadLoop
from tenure.worker.runner import (
    Cancelled,
    CompletedIn,
    Ending,
    Raised,
    Succeeded,
    run_in_thread,
)
from tenure.worker.telling import Teller

if TYPE_CHECKING:
    from tenure.app import App
    from tenure.registry import Registry

OWNER = "tenure-testing"
LEASE_SECONDS = 3600.0
"""Nothing else runs these tasks, so the lease only has to outlast the call."""
DEFAULT_LIMIT = 10_000


class TasksRemain(TenureError):
    """``run_until_empty`` ran its limit of executions and tasks are still queued:
    a task that snoozes or re-enqueues itself forever, most likely."""


@dataclass
class Drained:
    """What ``run_until_empty`` ran: each execution's task as it was reserved,
    and how many executions ended in each status."""

    executed: list[Task] = field(default_factory=list)
    ended: Counter[Status] = field(default_factory=Counter)

    @property
    def done(self) -> int:
        """Executions that succeeded."""
        return self.ended[Status.DONE]

    @property
    def failed(self) -> int:
        """Executions that failed for good (no attempt left, or final)."""
        return self.ended[Status.FAILED]

    @property
    def retried(self) -> int:
        """Attempts that failed and were queued again (pending once more)."""
        return self.ended[Status.PENDING]

    def __len__(self) -> int:
        return len(self.executed)


def draining(app: App) -> bool:
    """Whether a ``run_until_empty`` of ``app``'s store is under way in this
    context (the tasks it runs, and the threads they start, are in it)."""
    moved = ENQUEUE_CLOCK.get()
    return moved is not None and app.opened and moved[0] is app.store


def run_until_empty(
    app: App,
    *,
    topics: Iterable[str] | None = None,
    scheduled: bool = True,
    limit: int = DEFAULT_LIMIT,
) -> Drained:
    """Run the App's queued tasks here until none is left to run.

    ``topics`` defaults to those of the App's tasks, as a worker's do. With
    ``scheduled=False`` only tasks due now run. Raises :class:`TasksRemain`
    after ``limit`` executions (or ``limit`` moves of the clock). Called from a
    task it runs (eager mode), it returns at once: the running call takes the
    new task after the one that enqueued it.
    """
    if isinstance(topics, str):
        raise InvalidInput("topics", "must be a list of topic names, not one string")
    if draining(app):
        return Drained()
    chosen = sorted(set(topics)) if topics is not None else app.registry.topics()
    drain = _Drain(app.store, app.registry, chosen, scheduled)
    token = ENQUEUE_CLOCK.set((app.store, drain.now))
    try:
        return drain.run(limit)
    finally:
        ENQUEUE_CLOCK.reset(token)


class _Drain:
    """One ``run_until_empty`` call: its clock, its loop for ``async def`` tasks."""

    def __init__(self, store: Store, registry: Registry, topics: list[str], scheduled: bool):
        self.store, self.registry, self.topics = store, registry, topics
        self.scheduled = scheduled
        self.tags = frozenset().union(*(f.config.tags for f in registry.values()))
        """Every tag the App's tasks carry: a tagged task is reserved only by a
        worker that has all its tags."""
        self.ahead = timedelta(0)
        """How far the clock given to the store runs ahead of the store's own."""
        self.moves = 0
        self.teller = Teller(store, registry.hooks)  # never started: tells inline
        self.loop = ThreadLoop()

    def run(self, limit: int) -> Drained:
        drained = Drained()
        try:
            while self.topics and (task := self._next(limit)) is not None:
                if len(drained) >= limit:
                    self._release(task)
                    raise TasksRemain(f"tasks remain after {limit} executions")
                drained.executed.append(task)
                state = self._execute(task)
                if state is not None:
                    drained.ended[state.status] += 1
        finally:
            self.loop.close()
        return drained

    def now(self) -> datetime | None:
        """The time to give the store: ``None`` (its own) until the clock moved."""
        return None if not self.ahead else self.store.clock_now() + self.ahead

    def _next(self, limit: int) -> Task | None:
        """The next task to run, moving the clock to the next scheduled one if
        nothing is due and scheduled tasks run."""
        stuck: set[str] = set()
        while True:
            params = ReserveParams(OWNER, self.topics, 1, LEASE_SECONDS, self.tags, self.now())
            reserved = self.store.task_reserve(params)
            if reserved:
                return reserved[0]
            if not self.scheduled or not self._skip_ahead(stuck):
                return None
            self.moves += 1
            if self.moves > limit:
                raise TasksRemain(f"tasks remain after the clock moved {limit} times")

    def _skip_ahead(self, stuck: set[str]) -> bool:
        """Move the clock to the earliest time a task of our topics waits for: a
        pending task's ``run_at`` or a snoozed one's wake-up (which the
        supervisor would give; here it is given at once). False if none, or if
        the earliest is a task found due already that could not be reserved
        (its tags are not the App's): ``stuck`` remembers those."""
        now = self.now() or self.store.clock_now()
        waiting = [(t.run_at, t) for t in self._pending() if t.run_at is not None]
        waiting += [
            (t.lease_expires_at, t)
            for t in self._leased()
            if t.status is Status.SNOOZED and t.lease_expires_at is not None
        ]
        if not waiting:
            return False
        at, task = min(waiting, key=lambda pair: pair[0])
        if at > now:
            self.ahead += at - now + timedelta(milliseconds=1)
        elif task.status is Status.PENDING:
            # Due by now: it came due since the reservation (reserve again), or it
            # is not ours to reserve (found due twice: stop).
            if task.id in stuck:
                return False
            stuck.add(task.id)
        if task.status is Status.SNOOZED:
            self.store.task_revoke(task.id, task.record_ver, now=self.now())
        return True

    def _pending(self) -> Iterator[Task]:
        for topic in self.topics:
            pending, cursor = TaskFilter(topic=topic, status=Status.PENDING), None
            while True:
                page = self.store.task_list(pending, cursor=cursor, limit=1000)
                yield from page.tasks
                if (cursor := page.cursor) is None:
                    break

    def _leased(self) -> Iterator[Task]:
        cursor = None
        while True:
            page = self.store.task_list_leased(topics=self.topics, cursor=cursor)
            yield from page.tasks
            if (cursor := page.cursor) is None:
                break

    def _execute(self, task: Task) -> TaskState | None:
        """Run ``task`` and write its ending; if anything interrupts that (the
        store fails, Ctrl-C), the task is handed back before the error goes on."""
        lease = Lease(task.id, OWNER, task.lease_token or 0)
        held = Held(task, lease, running=True)
        try:
            self.teller.started(held)
            link = Link(
                report=partial(self._progress, lease), complete=partial(self._complete_in, lease)
            )
            ending = run_in_thread(self.registry, task, lease, self.loop, link=link)
            assert ending is not None  # only a cancellation, which nothing sends here, is None
            if isinstance(ending, Raised) and ending.error.type == "KeyboardInterrupt":
                raise KeyboardInterrupt  # Ctrl-C in the test's own thread: stop the test
            outcome, delay = self._write(held, ending)
        except BaseException:
            self._release(task)
            raise
        if isinstance(outcome, TenureError):
            self.teller.discarded(held, outcome)
            return None
        self.teller.ended(held, ending, outcome, delay)
        return outcome

    def _progress(self, lease: Lease, fraction: float, note: str | None) -> None:
        """What the task reports, written at this drain's clock."""
        self.store.task_progress(lease, fraction, note, now=self.now())

    def _complete_in(self, lease: Lease, connection: Any, result: Any) -> None:
        """The task's own ending, in its transaction, at this drain's clock."""
        self.store.task_complete(lease, result, now=self.now(), connection=connection)

    def _release(self, task: Task) -> None:
        """Hand ``task`` back to the queue, if it is still ours to hand back."""
        with contextlib.suppress(Exception):
            lease = Lease(task.id, OWNER, task.lease_token or 0)
            self.store.task_release(lease, now=self.now())

    def _write(self, held: Held, ending: Ending) -> tuple[StateOutcome, float | None]:
        """Write ``ending`` fenced by the lease, at this drain's clock; with the
        delay it asked for (next attempt or wake-up)."""
        now = self.now()
        if isinstance(ending, Succeeded):
            completion = Completion(held.lease, ending.result, ending.encoded)
            return self.store.task_complete_many([completion], now=now)[0], None
        if isinstance(ending, Raised):
            failure = failure_of(held, ending, self.registry.backoff_of(held.task.name))
            return self.store.task_fail_many([failure], now=now)[0], failure.retry_in
        if isinstance(ending, CompletedIn):
            policy = self.registry.backoff_of(held.task.name)
            return settle_own(self.store, held, policy, now), None
        try:
            if isinstance(ending, Cancelled):
                ended = self.store.task_cancel_held(held.lease, ending.error, now=now)
                return TaskState.of(ended), None
            snoozed = self.store.task_snooze(held.lease, ending.seconds, now=now)
        except StoreUnavailable:
            raise
        except TenureError as exc:
            return exc, None
        return TaskState.of(snoozed), ending.seconds
