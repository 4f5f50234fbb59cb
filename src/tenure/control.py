"""What task code may raise to steer its own task, and what it may ask about itself.

``raise tenure.Snooze(seconds)`` pauses the task (status snoozed; the supervisor
wakes it later). ``raise tenure.Retry(in_=seconds)`` asks for another attempt.
``raise tenure.Cancel(reason)`` ends the task cancelled, with no retry, whatever
attempts remain. None is an error, so none derives from
:class:`~tenure.errors.TenureError`.
``tenure.current()`` tells running code which task and attempt it is.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass

from tenure.task import Lease, Task


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
class Current:
    """The running task, as the worker reserved it."""

    task: Task
    lease: Lease
    stop: threading.Event | None = None
    """Set by the worker when this execution must stop (what :attr:`cancelled`
    reads); ``None`` where nothing can tell it (a pool child, which is killed)."""

    @property
    def cancelled(self) -> bool:
        """Whether this execution should stop now: the task was cancelled, ran past
        its timeout, or its lease was lost (another worker may run it). A thread
        cannot be killed, so a long sync task on the thread pool checks this
        between steps and returns (whatever it returns is ignored: the worker has
        let the task go). Cheap enough to check in a tight loop: no store read.
        The async pools cancel the coroutine as well; the process pool kills
        its child, so there it is never seen true."""
        return self.stop is not None and self.stop.is_set()

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
