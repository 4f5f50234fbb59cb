"""What task code may raise to steer its own task, and what it may ask about itself.

``raise tenure.Snooze(seconds)`` pauses the task (status snoozed; the supervisor
wakes it later). ``raise tenure.Retry(in_=seconds)`` asks for another attempt.
``raise tenure.Cancel(reason)`` ends the task cancelled, with no retry, whatever
attempts remain. None is an error, so none derives from
:class:`~tenure.errors.TenureError`.
``tenure.current()`` tells running code which task and attempt it is, whether it
should stop (``cancelled``), records how far it got (``progress``), and writes
its ending inside a transaction of the task's own (``complete_in``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from tenure.checks import number, optional_text
from tenure.task import Lease, Task

MAX_PROGRESS_NOTE = 200
"""Most characters of a progress note (the store's limit too)."""

Report = Callable[[float, "str | None"], None]
"""Writes a running task's progress where the worker keeps it."""
Complete = Callable[[Any, Any], None]
"""Writes a running task's ending, done with a result, on a connection of the
task's own (``complete_in``); raises the store's refusal."""


class ControlFlow(Exception):
    """Base of the signals task code raises to steer its task."""


class Snooze(ControlFlow):
    """Pause this task for ``seconds``; it does not spend an attempt."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"snooze for {seconds}s")
        self.seconds = seconds


class Retry(ControlFlow):
    """End this attempt and try again ``in_`` seconds later (while attempts remain);
    ``None`` uses the task's backoff."""

    def __init__(self, in_: float | None = None, reason: str = "retry requested") -> None:
        super().__init__(reason)
        self.in_ = in_


class Cancel(ControlFlow):
    """End this task ``cancelled`` at once, without a retry; ``reason`` is kept
    as its error (type ``Cancel``), for ``tenure show`` and the API."""

    def __init__(self, reason: str = "cancelled by the task") -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Link:
    """What ties a running execution to its worker: ``stop``, set when the
    worker lets the execution go; ``report``, which writes its progress;
    ``complete``, which writes its ending on the task's own connection, and
    ``completed``, which holds the result it wrote, once it has."""

    stop: threading.Event = field(default_factory=threading.Event)
    report: Report | None = None
    complete: Complete | None = None
    completed: list[Any] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Current:
    """The running task, as the worker reserved it."""

    task: Task
    lease: Lease
    link: Link = field(default_factory=Link)
    """What :attr:`cancelled` reads and :meth:`progress` writes through (the worker's)."""

    @property
    def cancelled(self) -> bool:
        """Whether this execution should stop now: the task was cancelled, ran past
        its timeout, or its lease was lost (another worker may run it). A thread
        cannot be killed, so a long sync task on the thread pool checks this
        between steps and returns (whatever it returns is ignored: the worker has
        let the task go). Cheap enough to check in a tight loop: no store read.
        The async pools cancel the coroutine as well; the process pool kills
        its child if the task has not stopped two seconds after this turned
        true."""
        return self.link.stop.is_set()

    def progress(self, fraction: float, note: str | None = None) -> None:
        """Record how far this attempt got: ``fraction`` from 0 to 1 and a short
        ``note`` ("step 2 of 5"), shown by ``handle.refresh()``, ``tenure show``,
        the API and the dashboard. Each call is one write to the store, fenced
        by the lease (once the lease is gone it is dropped: see
        :attr:`cancelled`): call it per step, not per item. A store that cannot
        be reached is logged, not raised: progress is no reason to fail a task.
        In an ``async def`` task the write holds the event loop for its round
        trip. Bad values raise :class:`~tenure.errors.InvalidInput`."""
        fraction = number(fraction, "progress", 0.0, 1.0)
        note = optional_text(note, "note", max_length=MAX_PROGRESS_NOTE)
        # Once the task wrote its ending in its own transaction, that holds the
        # task's row: a write from elsewhere would wait for it, and nothing more
        # of this attempt is shown anyway.
        if self.link.report is not None and not self.link.completed:
            self.link.report(fraction, note)

    def complete_in(self, connection: Any, result: Any = None) -> None:
        """Write this task's ending, done with ``result``, inside the open
        transaction of ``connection`` (a ``psycopg.Connection`` to the store's
        PostgreSQL database, or a ``sqlite3.Connection`` to its SQLite file), so
        that the work the task wrote there and its ending commit together, or
        not at all. Fenced by the lease as every ending is: if the lease is gone
        the refusal (:class:`~tenure.errors.LeaseLost` …) is raised here, and it
        must roll the transaction back (let it propagate out of
        ``with conn.transaction():``). Once written, what the task returns is
        not stored; if the transaction does not commit after all, the attempt
        fails when the task returns, and is retried like any failure. Not on
        the process pool (a child has no store of its own)."""
        if self.link.complete is None:
            raise RuntimeError(
                "complete_in() needs a worker of the thread or async pool (the process "
                "pool's children have no store of their own)"
            )
        self.link.complete(connection, result)
        self.link.completed[:] = [result]

    @property
    def attempt(self) -> int:
        """1 for the first attempt, 2 for the first retry, and so on."""
        return self.task.attempts

    @property
    def headers(self) -> Mapping[str, str]:
        """What middleware added to the task when it was enqueued (trace context,
        a request id); empty for a task enqueued without middleware."""
        data = self.task.data
        found = data.get("headers") if isinstance(data, dict) else None
        return found if isinstance(found, dict) else {}

    @property
    def fencing_token(self) -> int:
        """Grows with every reservation of this task: pass it to systems you write
        to, so they can refuse writes from an older, superseded attempt."""
        return self.lease.token


_current: ContextVar[Current | None] = ContextVar("tenure_current", default=None)


def current() -> Current:
    """The task this code is running as; ``RuntimeError`` outside a task."""
    found = _current.get()
    if found is None:
        raise RuntimeError("tenure.current() is only available inside a running task")
    return found


def set_current(value: Current | None) -> None:
    """Used by the worker around each execution."""
    _current.set(value)
