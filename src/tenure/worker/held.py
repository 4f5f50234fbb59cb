"""What a worker holds: each reserved task, its lease, and how its execution stands."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from tenure.task import Lease, Task


@dataclass(eq=False, slots=True)
class Held:
    """One reserved task. ``running`` turns true when an executor claims it (a
    prefetched task waits until then); ``ended`` turns true once, when the first
    ending is accepted (the execution's own, a timeout, or abandonment); later
    ones are ignored, so an abandoned thread can never report."""

    task: Task
    lease: Lease
    started: float = field(default_factory=time.monotonic)
    expires: float = 0.0  # the lease's end by this process's monotonic clock
    deadline: float | None = None  # timeout, by the monotonic clock, once running
    running: bool = False
    ended: bool = False
    wrote_own: bool = False
    """Its task wrote its own ending in a transaction of its own (``complete_in``):
    its row is the task's until that transaction ends, so the keepalive and the
    cancel watch leave it alone (the worker settles it when the task returns)."""


def past_deadline(held: Held) -> bool:
    """Whether ``held``'s task reached its deadline while it waited here: the
    time it had left when reserved, by the store's clock (``expires_at`` less
    ``started_at``), measured since by this process's monotonic clock."""
    task = held.task
    if task.expires_at is None or task.started_at is None:
        return False
    left = (task.expires_at - task.started_at).total_seconds()
    return time.monotonic() - held.started >= left


class Holdings:
    """The tasks a worker holds, safe to use from its threads.

    The fetch loop asks how many are unfinished and waiting before every
    reservation, with hundreds held: both are counted as they change rather
    than by walking every held task.
    """

    def __init__(self) -> None:
        self._held: dict[str, Held] = {}
        self._unfinished = 0  # waiting or running
        self._waiting = 0  # not yet claimed by an executor
        self._lock = threading.Lock()
        self.changed = threading.Condition(self._lock)

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)

    def unfinished(self) -> int:
        """How many held tasks are waiting or running (not those whose ending is
        only waiting to be written): the slots in use."""
        return self._unfinished

    def unwritten(self) -> int:
        """How many held tasks have ended and wait for their endings to be written."""
        with self._lock:
            return len(self._held) - self._unfinished

    def waiting(self) -> int:
        """How many held tasks wait for an executor to claim them."""
        return self._waiting

    def add(self, held: Held) -> None:
        """Hold a new reservation (see :meth:`add_all`)."""
        self.add_all([held])

    def add_all(self, helds: list[Held]) -> None:
        """Hold new reservations, a whole reservation's under one lock. One of
        the same task still unfinished here lost its lease (revoked or cancelled,
        then reserved anew by this very worker before a keepalive told it so):
        it is ended, so its execution, should it ever report, is ignored and
        never written under the new lease."""
        with self._lock:
            for held in helds:
                old = self._held.get(held.task.id)
                if old is not None and not old.ended:
                    self._mark_ended(old)
                self._held[held.task.id] = held
            self._unfinished += len(helds)
            self._waiting += len(helds)

    def get(self, task_id: str) -> Held | None:
        with self._lock:
            return self._held.get(task_id)

    def claim(self, held: Held) -> bool:
        """Whether the execution of ``held`` may begin now: it is still held and
        has not ended (been released or abandoned while it waited). Its timeout
        starts here."""
        with self._lock:
            if self._held.get(held.task.id) is not held or held.ended:
                return False
            held.running = True
            self._waiting -= 1
            held.started = time.monotonic()
            if held.task.timeout is not None:
                held.deadline = held.started + held.task.timeout
            return True

    def end(self, held: Held) -> bool:
        """Mark the execution of ``held`` ended; False if it had ended already or
        is no longer held (a newer reservation of its task replaced it)."""
        with self._lock:
            if self._held.get(held.task.id) is not held or held.ended:
                return False
            self._mark_ended(held)
            return True

    def end_waiting(self, which: Callable[[Held], bool] | None = None) -> list[Held]:
        """End every held task that no execution has claimed yet (of those
        ``which`` takes, if given)."""
        with self._lock:
            waiting = [
                h
                for h in self._held.values()
                if not h.running and not h.ended and (which is None or which(h))
            ]
            for held in waiting:
                self._mark_ended(held)
            return waiting

    def drop(self, held: Held) -> None:
        """Forget ``held`` (its ending was written, or its lease is gone)."""
        self.drop_all([held])

    def drop_all(self, helds: list[Held]) -> None:
        """Forget ``helds``, a batch of written endings under one lock."""
        with self._lock:
            for held in helds:
                if self._held.get(held.task.id) is held:
                    if not held.ended:
                        self._mark_ended(held)
                    del self._held[held.task.id]
            self.changed.notify_all()

    def _mark_ended(self, held: Held) -> None:
        held.ended = True
        self._unfinished -= 1
        if not held.running:
            self._waiting -= 1

    def snapshot(self) -> list[Held]:
        with self._lock:
            return list(self._held.values())

    def __iter__(self) -> Iterator[Held]:
        return iter(self.snapshot())

    def wait_empty(self, timeout: float) -> bool:
        """Wait until nothing is held, at most ``timeout`` seconds."""
        with self._lock:
            return self.changed.wait_for(lambda: not self._held, timeout)
