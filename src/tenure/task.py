"""The task record, its statuses, and the one table of allowed transitions.

Every store enforces :data:`TRANSITIONS`; nothing else in tenure decides which
status may follow which.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from tenure.frozen import quick_init

JSON = Any
"""A value that JSON can carry: dict, list, str, int, float, bool or None."""


class Status(StrEnum):
    """Where a task is in its life. Values are the strings stored."""

    WAITING = "waiting"
    """Behind a gate of a workflow (a group's callback, a chain's next link):
    pending when every task before it has ended."""
    PENDING = "pending"
    RUNNING = "running"
    SNOOZED = "snoozed"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


TRANSITIONS: Mapping[Status, frozenset[Status]] = {
    # its gate opens; its gate breaks (a chain stopped before it), or cancel
    Status.WAITING: frozenset({Status.PENDING, Status.CANCELLED}),
    # reserve; cancel
    Status.PENDING: frozenset({Status.RUNNING, Status.CANCELLED}),
    # complete; fail (last attempt, or revoked with no attempt left); retry, revoke,
    # release or unique reschedule; snooze; cancel
    Status.RUNNING: frozenset(
        {Status.DONE, Status.FAILED, Status.PENDING, Status.SNOOZED, Status.CANCELLED}
    ),
    # woken when the snooze ends; cancel
    Status.SNOOZED: frozenset({Status.PENDING, Status.CANCELLED}),
    Status.DONE: frozenset(),
    # a person retries it
    Status.FAILED: frozenset({Status.PENDING}),
    Status.CANCELLED: frozenset({Status.PENDING}),
}
"""For each status, the statuses it may move to. Done is final."""

LEASED = frozenset({Status.RUNNING, Status.SNOOZED})
"""Statuses the lease supervisor watches."""

FINISHED = frozenset({Status.DONE, Status.FAILED, Status.CANCELLED})
"""Statuses in which no work is pending or under way."""

RETRYABLE = frozenset({Status.FAILED, Status.CANCELLED})
"""Statuses from which a person may send a task back to pending."""


def can_transition(from_status: Status, to_status: Status) -> bool:
    """Whether the status table allows ``from_status`` → ``to_status``."""
    return to_status in TRANSITIONS[from_status]


def sources_of(to_status: Status) -> frozenset[Status]:
    """Every status from which ``to_status`` may be reached."""
    return frozenset(s for s, targets in TRANSITIONS.items() if to_status in targets)


CANCELLABLE = sources_of(Status.CANCELLED)
"""Statuses from which a task may be cancelled."""


@dataclass(frozen=True, slots=True)
class TaskError:
    """An error of a task: exception type, message and traceback. As the store
    keeps it, it also says which ``attempt`` it ended, and when (``at``, in
    ``Task.errors``)."""

    type: str
    message: str
    traceback: str = ""
    # Which error it is, not what it says: two errors that say the same are equal.
    attempt: int | None = field(default=None, compare=False)
    at: datetime | None = field(default=None, compare=False)

    def stored(self) -> dict[str, str]:
        """What a store is given to write: the store stamps the attempt and time."""
        return {"type": self.type, "message": self.message, "traceback": self.traceback}

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "message": self.message,
            "traceback": self.traceback,
            "attempt": self.attempt,
            "at": None if self.at is None else self.at.isoformat(),
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> TaskError:
        attempt, at = value.get("attempt"), value.get("at")
        return cls(
            str(value["type"]),
            str(value["message"]),
            str(value.get("traceback") or ""),
            None if attempt is None else int(attempt),
            _moment(at),
        )


def _moment(value: Any) -> datetime | None:
    """A time as stored (seconds since the epoch) or shown (ISO 8601)."""
    if value is None:
        return None
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    return datetime.fromtimestamp(float(value), UTC)


class GateMode(StrEnum):
    """When a gate lets the tasks behind it go (:class:`~tenure.store.types.NewGate`)."""

    ALL_ENDED = "all_ended"
    """Once every member has ended, done, failed or cancelled (a group's callback)."""
    ALL_DONE = "all_done"
    """Once every member is done; the first member failed or cancelled instead
    cancels everything waiting behind the gate, and behind those (a chain)."""


class GateShape(StrEnum):
    """What a task released by a gate is given first, before its own arguments."""

    OUTCOMES = "outcomes"
    """Every member's :class:`Ended`, in the members' order (a group's callback)."""
    RESULT = "result"
    """The one member's result (a chain's link after a task)."""
    RESULTS = "results"
    """Every member's result, in the members' order (a chain's link after a group)."""


@dataclass(frozen=True, slots=True)
class Ended:
    """How one member of a gate ended, as the task behind it is given it (a
    group's callback gets one per member)."""

    id: str
    status: Status
    result: Any = None
    error: TaskError | None = None

    @property
    def ok(self) -> bool:
        """Whether the task is done (its result is in ``result``)."""
        return self.status is Status.DONE

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Ended:
        """One of the outcomes a gate stored (``Task.upstream``)."""
        error = value.get("error")
        return cls(
            str(value["id"]),
            Status(value["status"]),
            value.get("result"),
            None if error is None else TaskError.from_json(error),
        )


def given(upstream: Mapping[str, Any]) -> Any:
    """What a task released by a gate is given before its own arguments, from
    what the gate stored (``Task.upstream``), as its :class:`GateShape` says."""
    outcomes = upstream["outcomes"]
    shape = GateShape(upstream["shape"])
    if shape is GateShape.RESULT:
        return outcomes[0]["result"]
    if shape is GateShape.RESULTS:
        return [outcome["result"] for outcome in outcomes]
    return [Ended.from_json(outcome) for outcome in outcomes]


@quick_init
@dataclass(frozen=True, slots=True)
class Task:
    """One stored task, as a store returns it. Immutable: a write returns a new one."""

    id: str
    topic: str
    name: str
    status: Status
    data: JSON = None
    sub_topic: str = "default"
    group_id: str | None = None
    description: str | None = None
    result: JSON = None
    error: TaskError | None = None
    priority: int = 0
    attempts: int = 0
    max_attempts: int = 1
    tags: frozenset[str] = field(default_factory=frozenset)
    assignee: str | None = None
    timeout: float | None = None
    run_at: datetime | None = None  # not before this time; None: may run at once
    created_at: datetime | None = None
    updated_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    duration: float | None = None
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    lease_token: int | None = None
    lease_seconds: float | None = None
    record_ver: int = 1
    unique_key: str | None = None
    progress: float | None = None
    """How far the running task said it got, from 0 to 1
    (``tenure.current().progress``); kept once it ends."""
    progress_note: str | None = None
    """What the task said with its last progress ("step 2 of 5")."""
    gate_in: str | None = None
    """The gate this task waits behind (a workflow's), if any."""
    gate_out: str | None = None
    """The gate whose members this task is one of, if any."""
    upstream: JSON = None
    """What its gate gave it when it opened: ``{"shape": …, "outcomes": [{"id",
    "status", "result", "error"}, …]}`` (:class:`GateShape`); ``None`` before."""
    errors: tuple[TaskError, ...] = ()
    """The error of each attempt that ended in one, oldest first (the last 20,
    each traceback's last 8 KB); ``error`` is the last, whole."""
    meta: dict[str, str] | None = None
    """What it was enqueued with to be found by (``options(meta={"customer":
    "c-42"})``): names and values, both text; ``tenure tasks --meta`` filters
    on them."""
    expires_at: datetime | None = None
    """Its deadline (``expires`` seconds after its creation, on the store's
    clock): past it, it is never reserved, and ends cancelled instead of
    running late."""
    limit_key: str | None = None
    """The key whose running tasks it counts among (``@app.task(concurrency=
    tenure.Limit(...))``): at most :attr:`limit_max` of them run at once."""
    limit_max: int | None = None
    """How many tasks of :attr:`limit_key` may run at once."""
    order_key: str | None = None
    """The key whose tasks run one at a time in enqueue order
    (``@app.task(ordered_by=...)``)."""
    fair_key: str | None = None
    """The key (a tenant) reservations take turns between, within a priority
    (``@app.task(fair_key=...)``)."""

    @property
    def finished(self) -> bool:
        """Whether the task has reached done, failed or cancelled."""
        return self.status in FINISHED


TIME_FIELDS = tuple(
    field.name
    for field in dataclasses.fields(Task)
    if typing.get_type_hints(Task)[field.name] in (datetime, datetime | None)
)
"""The fields of a task that hold a moment: what each store reads back from
its own form of time (an epoch, a timestamp in the session's zone)."""


# -- values shared by the task's code, its declaration and the store --------------


class LockPhase(StrEnum):
    """When a unique task holds its lock: from enqueue until it starts, while it runs,
    or from enqueue until it ends."""

    UNTIL_EXECUTING = "until_executing"  # enqueue → start
    WHILE_EXECUTING = "while_executing"  # start → end
    UNTIL_EXECUTED = "until_executed"  # enqueue → end


class OnConflict(StrEnum):
    """What happens to a unique task whose lock is held by another."""

    REJECT = "reject"  # not created at enqueue; cancelled at start
    RAISE = "raise"  # UniqueConflict to the caller; a failed attempt at start
    RESCHEDULE = "reschedule"  # (while_executing) back to pending, retry_in seconds later


@dataclass(frozen=True, slots=True)
class UniqueRule:
    """A task's uniqueness as the store enforces it: the lock ``key``, when it is
    held, what a conflict does, the lock's time to live (from the scheduled time,
    or from the start for ``while_executing``) and the delay of a reschedule, or
    of the retry after a ``raise`` conflict at start."""

    key: str
    lock: LockPhase
    on_conflict: OnConflict = OnConflict.REJECT
    ttl: float = 600.0
    retry_in: float = 5.0


@quick_init
@dataclass(frozen=True, slots=True)
class Lease:
    """What a holder names on every write: the task, who holds it, and the token
    its reservation was granted. A newer reservation carries a newer token."""

    task_id: str
    owner: str
    token: int
