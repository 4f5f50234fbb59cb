"""Writes execution endings to the store in batches, fenced by each lease.

Endings queue up while a write is under way and go out together: one
``task_complete_many``, one ``task_fail_many``. A task is forgotten by the worker
only after its ending is committed (or refused because the lease is gone), so
the keepalive goes on extending it until then and nothing is acknowledged early.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from tenure.errors import AlreadyDone, StoreUnavailable, TenureError
from tenure.hooks import Hooks
from tenure.retry import Backoff
from tenure.store import Completion, Failure, Store
from tenure.store.types import StateOutcome, TaskState
from tenure.task import Lease, Status, Task
from tenure.worker.held import Held, Holdings
from tenure.worker.runner import (
    NOT_COMMITTED,
    Cancelled,
    CompletedIn,
    Ending,
    Raised,
    Succeeded,
)
from tenure.worker.telling import Teller

log = logging.getLogger("tenure.worker")

BATCH = 500
RETRY_PAUSES = Backoff(base=0.5, maximum=8.0, jitter=0.5)
"""The waits before each retry of a write the store did not take: about half a
second first, doubling after each failure up to 8 s, spread so that the
workers of a store back from an outage do not all write at once."""

BackoffOf = Callable[[str], Backoff]
Told = tuple[Held, Ending, float | None]
"""An ending to write, with the delay it asks for (next attempt, or wake-up)."""


class Completer:
    """A thread that commits endings; ``put`` never blocks the executions."""

    def __init__(
        self,
        store: Store,
        holdings: Holdings,
        backoff_of: BackoffOf,
        *,
        give_up: threading.Event | None = None,
        teller: Teller | None = None,
    ) -> None:
        self.store = store
        self.holdings = holdings
        self.backoff_of = backoff_of
        # Set (a second stop signal) while the store is unreachable: endings not
        # yet written are dropped; their tasks, still leased in the store, are
        # handed back by the supervisor once the leases lapse and run again.
        self.give_up = give_up or threading.Event()
        self.teller = teller or Teller(store, Hooks())
        self._queue: queue.SimpleQueue[tuple[Held, Ending] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="tenure-completer", daemon=True)
        self.on_written: Callable[[], None] = lambda: None

    def start(self) -> None:
        self._thread.start()

    def put(self, held: Held, ending: Ending) -> None:
        self._queue.put((held, ending))

    def close(self) -> None:
        """Write what is queued, then stop."""
        self._queue.put(None)
        self._thread.join()

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            batch = [] if first is None else [first]
            stop = first is None
            while len(batch) < BATCH:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                else:
                    batch.append(item)
            if batch:
                self._write(batch)
                self.on_written()
            if stop:
                return

    def _write(self, batch: list[tuple[Held, Ending]]) -> None:
        done: list[Told] = []
        completions: list[Completion] = []
        failed: list[Told] = []
        failures: list[Failure] = []
        for held, ending in batch:
            if isinstance(ending, Succeeded):
                done.append((held, ending, None))
                completions.append(Completion(held.lease, ending.result, ending.encoded))
            elif isinstance(ending, Raised):
                failure = self._failure(held, ending)
                failed.append((held, ending, failure.retry_in))
                failures.append(failure)
            elif isinstance(ending, Cancelled):
                write = partial(self._held_write, self.store.task_cancel_held, held, ending.error)
                self._persist([(held, ending, None)], write)
            elif isinstance(ending, CompletedIn):
                self._persist([(held, ending, None)], partial(self._settle_own, held))
            else:
                write = partial(self._held_write, self.store.task_snooze, held, ending.seconds)
                self._persist([(held, ending, ending.seconds)], write)
        if done:
            self._persist(done, partial(self.store.task_complete_many, completions))
        if failed:
            self._persist(failed, partial(self.store.task_fail_many, failures))

    def _settle_own(self, held: Held) -> list[StateOutcome]:
        return [settle_own(self.store, held, self.backoff_of(held.task.name))]

    def _held_write(
        self, write: Callable[[Lease, Any], Task], held: Held, argument: Any
    ) -> list[StateOutcome]:
        """A single holder write (snooze, cancel) as a batch of one outcome."""
        try:
            return [TaskState.of(write(held.lease, argument))]
        except StoreUnavailable:
            raise
        except TenureError as exc:
            return [exc]

    def _failure(self, held: Held, ending: Raised) -> Failure:
        return failure_of(held, ending, self.backoff_of(held.task.name))

    def _persist(self, items: list[Told], write: Callable[[], list[StateOutcome]]) -> None:
        """Write until the store answers: an ending is never dropped for a passing
        outage; each held task is forgotten once its ending's fate is known."""
        pauses = RETRY_PAUSES.delays()
        in_doubt = False
        while True:
            try:
                outcomes = write()
                break
            except StoreUnavailable as exc:
                in_doubt = True  # the write may have committed before the error
                pause = next(pauses)
                log.warning(
                    "store unavailable while writing %d endings (%s); retrying in %.1fs",
                    len(items),
                    exc,
                    pause,
                )
                if self.give_up.wait(pause):
                    log.error(
                        "%d endings not written: their tasks run again after their leases lapse",
                        len(items),
                    )
                    self.holdings.drop_all([held for held, _, _ in items])
                    return
            except TenureError:  # refused as a whole (a bug, or bad input): never fatal here
                log.exception(
                    "the store refused a batch of %d endings; their tasks run again "
                    "after their leases lapse",
                    len(items),
                )
                self.holdings.drop_all([held for held, _, _ in items])
                return
        if in_doubt:
            outcomes = [self._reread(h, e, o) for (h, e, _), o in zip(items, outcomes, strict=True)]
        try:
            for (held, ending, delay), outcome in zip(items, outcomes, strict=True):
                try:
                    if isinstance(outcome, TenureError):
                        self.teller.discarded(held, outcome)
                    else:
                        self.teller.ended(held, ending, outcome, delay)
                except Exception:  # telling must never keep an ending from being settled
                    log.exception("telling the ending of task %s failed", held.task.id)
        finally:
            self.holdings.drop_all([held for held, _, _ in items])

    def _reread(self, held: Held, ending: Ending, outcome: StateOutcome) -> StateOutcome:
        """A refusal of a write whose earlier try broke off may be this very
        ending, committed before the connection died: re-read the task, and
        take the ending as accepted if the task shows it, still under this
        lease. Never written a second time: the retry was fenced."""
        if not isinstance(outcome, TenureError):
            return outcome
        try:
            task = self.store.task_get(held.task.id)
        except TenureError:
            return outcome
        if task is None or (task.lease_token, task.assignee) != (
            held.lease.token,
            held.lease.owner,
        ):
            return outcome
        if isinstance(ending, Succeeded):
            shows = task.status is Status.DONE
        elif isinstance(ending, Raised):
            shows = task.status in (Status.PENDING, Status.FAILED) and task.error == ending.error
        elif isinstance(ending, Cancelled):
            shows = task.status is Status.CANCELLED and task.error == ending.error
        elif isinstance(ending, CompletedIn):
            shows = task.status is Status.DONE or task.error == NOT_COMMITTED
        else:
            shows = task.status is Status.SNOOZED
        return TaskState.of(task) if shows else outcome


def failure_of(held: Held, ending: Raised, policy: Backoff) -> Failure:
    """The failure to write for ``ending``: retried after the delay it asked for or
    its backoff's, unless it is final or the task has no attempt left."""
    retry_in: float | None = None
    if not ending.final and held.task.attempts < held.task.max_attempts:
        retry_in = ending.retry_in
        if retry_in is None:
            retry_in = policy.delay(held.task.attempts)
    return Failure(held.lease, ending.error, retry_in, policy.priority_step)


def settle_own(store: Store, held: Held, policy: Backoff, now: Any = None) -> StateOutcome:
    """The outcome of a task that wrote its own ending (``complete_in``) in a
    transaction of its own: the attempt is failed, fenced as ever, so that a
    transaction that did not commit leaves no task running for nothing; if it
    did commit, the task is done under this very lease, which the fail's
    refusal (``AlreadyDone``) says, and the task as stored is the outcome. A
    transaction still open holds the task's row: the fail waits for its end."""
    failure = failure_of(held, Raised(NOT_COMMITTED), policy)
    [outcome] = store.task_fail_many([failure], now=now)
    if isinstance(outcome, AlreadyDone):
        task = store.task_get(held.task.id)
        if task is not None:
            return TaskState.of(task)
    return outcome
