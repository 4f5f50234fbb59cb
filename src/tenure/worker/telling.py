"""Tells what became of each execution: one log line that says what happened, in
its words and at its level, and the App's hooks.

A failure is a WARNING while the task will be tried again and an ERROR when it
has failed for good, with the exception's type, message and traceback (the
record's ``traceback`` attribute; the ``tenure`` command's formatters print it).
A requested retry, a snooze and a cancellation are not failures and are told as
what they are.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from tenure.errors import TenureError
from tenure.hooks import HookKind, Hooks, Outcome
from tenure.logs import write_line
from tenure.store import Store
from tenure.store.types import TaskState
from tenure.task import Status, Task
from tenure.worker.held import Held
from tenure.worker.runner import (
    NOT_COMMITTED,
    Cancelled,
    CompletedIn,
    Ending,
    Raised,
    Snoozed,
    Succeeded,
)

log = logging.getLogger("tenure.worker")

QUEUE_CAPACITY = 10_000
"""Outcomes that may wait for the hooks before new ones are dropped."""
CLOSE_TIMEOUT = 5.0
"""Seconds the hooks get at shutdown to catch up."""

TellUnknown = Callable[[Task, float, dict[str, Any]], None]
"""Logs that a task of a name the worker does not know was given back for
seconds, with the line's record attributes."""

REQUESTED_RETRY = "Retry"
"""The error type of an attempt that ended by ``raise tenure.Retry(...)``."""


def fields(task: Task, **more: Any) -> dict[str, Any]:
    """The record attributes of a task's log line (see :mod:`tenure.logs`)."""
    return {
        "task_id": task.id,
        "task_name": task.name,
        "topic": task.topic,
        "attempt": task.attempts,
        **more,
    }


class Teller:
    """Tells what became of the executions of one worker.

    Log lines are written at once. What may be slow runs on a thread of its own,
    in order: the App's hooks (user code: an HTTP call to an error tracker, say)
    and the store read that tells a cancellation from a lost lease. So the
    keepalive, the completer and the async pool's event loop never wait on
    either. Until :meth:`start`, everything runs inline (for tests of parts).
    A full queue drops a job with a warning rather than stall the worker.
    """

    def __init__(
        self,
        store: Store,
        hooks: Hooks,
        tell_unknown: TellUnknown | None = None,
        capacity: int = QUEUE_CAPACITY,
    ) -> None:
        self.store = store
        self.hooks = hooks
        # Logs a task given back for its unknown name (rate-limited: see ``unknown``).
        self.tell_unknown = tell_unknown or _tell_unknown
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue(capacity)
        self._thread: threading.Thread | None = None
        self._dropped = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="tenure-hooks", daemon=True)
        self._thread.start()

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Run what is queued (at most ``timeout`` seconds more), then stop."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("hooks still running after %gs at shutdown; not waiting", timeout)

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            _guarded(job)

    def later(self, job: Callable[[], None]) -> None:
        if self._thread is None:
            _guarded(job)
            return
        try:
            self._jobs.put_nowait(job)
        except queue.Full:
            self._dropped += 1
            if self._dropped == 1 or self._dropped % 1000 == 0:
                log.warning("hooks fall behind: %d outcomes not told to them", self._dropped)

    def fire(self, outcome: Outcome) -> None:
        if self.hooks:
            self.later(partial(self.hooks.fire, outcome))

    def started(self, held: Held) -> None:
        """The execution of ``held`` begins: a DEBUG line (its ending says the rest)."""
        task = held.task
        if log.isEnabledFor(logging.DEBUG):  # a line per task: built only if shown
            log.debug(
                "task %s %s attempt=%d/%d started",
                task.id,
                task.name,
                task.attempts,
                task.max_attempts,
                extra=fields(task, status="running"),
            )
        if self.hooks:
            self.fire(Outcome("started", task))

    def ended(self, held: Held, ending: Ending, state: TaskState, delay: float | None) -> None:
        """The store accepted ``ending``; the task is now ``state.status``."""
        if isinstance(ending, CompletedIn):  # done in its own transaction, or not at all
            done = state.status is Status.DONE
            ending = Succeeded(ending.result) if done else Raised(NOT_COMMITTED)
        if isinstance(ending, Succeeded):
            self._succeeded(held, ending, state)
            return
        task, duration = held.task, round(time.monotonic() - held.started, 6)
        head = f"task {task.id} {task.name} attempt={task.attempts}/{task.max_attempts}"
        extra = fields(task, duration=duration, status=str(state.status))
        kind: HookKind
        error = ending.error if isinstance(ending, Raised) else None
        if isinstance(ending, Snoozed):
            kind, delay, error = "snoozed", ending.seconds, ending.unknown
            if ending.unknown is not None:
                self.tell_unknown(task, ending.seconds, extra)
            else:
                log.info("%s snoozed for %gs (no attempt spent)", head, ending.seconds, extra=extra)
        elif isinstance(ending, Cancelled):
            kind, error = "cancelled", ending.error
            log.info("%s cancelled itself: %s", head, ending.error.message, extra=extra)
        else:
            kind = "failed" if state.status is Status.FAILED else "retrying"
            _failure(head, ending, kind, delay, extra)
        if self.hooks:
            self.fire(Outcome(kind, task, error, None, delay, duration))

    def _succeeded(self, held: Held, ending: Succeeded, state: TaskState) -> None:
        """The most frequent line of all, one per task: nothing is built for it
        unless it is shown, and its message is formatted where it is written."""
        telling = log.isEnabledFor(logging.INFO)
        if not telling and not self.hooks:
            return
        task, duration = held.task, round(time.monotonic() - held.started, 6)
        if telling:
            _tell_success(task, duration, str(state.status))
        if self.hooks:
            self.fire(Outcome("succeeded", task, None, ending.result, None, duration))

    def discarded(self, held: Held, refusal: TenureError) -> None:
        """An ending or a keepalive of ``held`` was refused: its lease is gone.
        Whether it was cancelled takes a store read: done on the hooks' thread."""
        self.later(partial(self._discarded, held, refusal))

    def _discarded(self, held: Held, refusal: TenureError) -> None:
        task = held.task
        head = f"task {task.id} {task.name} attempt={task.attempts}/{task.max_attempts}"
        status = status_now(self.store, task.id)
        if status is Status.CANCELLED:
            log.info(
                "%s was cancelled; its execution is stopped and any ending ignored",
                head,
                extra=fields(task, status=str(status)),
            )
            if self.hooks:
                self.hooks.fire(Outcome("cancelled", task))
            return
        log.warning(
            "%s lost its lease (%s): another worker may hold it now; this execution is "
            "stopped and its ending ignored",
            head,
            refusal,
            extra=fields(task, error=str(refusal)),
        )


SUCCEEDED = "task %s %s attempt=%d/%d succeeded in %.3fs"


def _tell_success(task: Task, duration: float, status: str) -> None:
    """A task's success line: queued for the ``tenure`` command's writing thread
    without a record when nothing else would see one (:func:`tenure.logs.write_line`),
    else logged as usual."""
    args = (task.id, task.name, task.attempts, task.max_attempts, duration)
    facts = fields(task, duration=duration, status=status)
    if write_line(log, logging.INFO, SUCCEEDED, args, facts):
        return
    record = log.makeRecord(
        log.name, logging.INFO, __file__, SUCCEEDED_LINE, SUCCEEDED, args, None, "_tell_success"
    )
    # What ``extra=`` would add, without ``Logger.info``'s look up the stack for
    # the caller, which costs as much as the rest: it is here.
    record.__dict__.update(facts)
    log.handle(record)


SUCCEEDED_LINE = _tell_success.__code__.co_firstlineno
"""Where a task's success line is logged from, as its record says."""


def _tell_unknown(task: Task, seconds: float, extra: dict[str, Any]) -> None:
    log.info(
        "task %s %s of an unknown name given back for %gs", task.id, task.name, seconds, extra=extra
    )


def _guarded(job: Callable[[], None]) -> None:
    try:
        job()
    except Exception:  # a job's own failure must not end the thread that tells the rest
        log.exception("telling an outcome failed")


def _failure(
    head: str, ending: Raised, kind: HookKind, delay: float | None, extra: dict[str, Any]
) -> None:
    error = ending.error
    extra = {**extra, "error": f"{error.type}: {error.message}"}
    if error.type == REQUESTED_RETRY:
        if kind == "retrying":
            log.info(
                "%s asked to retry (%s); next attempt in %.1fs",
                head,
                error.message,
                delay or 0.0,
                extra=extra,
            )
        else:
            log.error("%s asked to retry, but no attempts are left: failed", head, extra=extra)
        return
    extra["traceback"] = error.traceback or None
    if kind == "retrying":
        log.warning(
            "%s failed: %s: %s; retrying in %.1fs",
            head,
            error.type,
            error.message,
            delay or 0.0,
            extra=extra,
        )
    else:
        why = "it cannot succeed on retry" if ending.final else "no attempts left"
        log.error(
            "%s failed for good (%s): %s: %s", head, why, error.type, error.message, extra=extra
        )


def status_now(store: Store, task_id: str) -> Status | None:
    """The task's status in the store, or ``None`` if it cannot be read now (only
    asked after a refused write, to tell a cancellation from a lost lease)."""
    try:
        task = store.task_get(task_id)
    except TenureError:
        return None
    return None if task is None else task.status
