"""The values that cross the store boundary: what callers pass in and get back."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tenure import serializer
from tenure.errors import TenureError
from tenure.frozen import quick_init
from tenure.task import (
    JSON,
    GateMode,
    GateShape,
    Lease,
    LockPhase,
    OnConflict,
    Status,
    Task,
    TaskError,
    UniqueRule,
)

__all__ = ["GateMode", "GateShape", "Lease", "LockPhase", "OnConflict", "UniqueRule"]
# (shared values, named here too)


@dataclass(frozen=True, slots=True)
class UniqueLock:
    """A held unique lock, as stored."""

    key: str
    task_id: str
    lock: LockPhase
    expires_at: datetime
    created_at: datetime


@quick_init
@dataclass(frozen=True, slots=True)
class NewTask:
    """A task to create. ``run_at`` (absolute) or ``delay`` (seconds from the
    store's now) postpone it; with neither it may run at once."""

    topic: str
    name: str
    data: JSON = None
    id: str | None = None
    sub_topic: str = "default"
    group_id: str | None = None
    description: str | None = None
    priority: int = 0
    max_attempts: int = 1
    tags: frozenset[str] = frozenset()
    timeout: float | None = None
    run_at: datetime | None = None
    delay: float | None = None
    unique: UniqueRule | None = None
    meta: Mapping[str, str] | None = None
    expires: float | None = None
    """Seconds after its creation by which it must start, or never run."""
    limit_key: str | None = None
    """The key it runs under at most ``limit_max`` at once with others of it."""
    limit_max: int | None = None
    order_key: str | None = None
    """The key whose tasks run one at a time, in enqueue order."""
    fair_key: str | None = None
    """The key (a tenant) reservations take turns between, within a priority."""


@quick_init
@dataclass(frozen=True, slots=True)
class PreparedTask:
    """A :class:`NewTask` that passed validation, with its JSON already encoded."""

    id: str
    topic: str
    sub_topic: str
    name: str
    data_json: str
    group_id: str | None
    description: str | None
    priority: int
    max_attempts: int
    tags: tuple[str, ...]
    timeout: float | None
    run_at: datetime | None
    delay: float
    unique: UniqueRule | None
    meta: dict[str, str] | None
    """Checked, its names sorted (so that it encodes the same way each time)."""
    expires: float | None
    limit_key: str | None
    limit_max: int | None
    order_key: str | None
    fair_key: str | None

    @property
    def meta_json(self) -> str | None:
        return None if self.meta is None else json.dumps(self.meta, ensure_ascii=False)

    @property
    def locks_at_enqueue(self) -> bool:
        """Whether creating this task takes its unique lock."""
        return self.unique is not None and self.unique.lock is not LockPhase.WHILE_EXECUTING

    def created(self, at: datetime, run_at: datetime | None) -> Task:
        """The task as a store inserted it ``at`` (its clock), runnable from
        ``run_at``: built from what was written, without reading it back."""
        return Task(
            id=self.id,
            topic=self.topic,
            sub_topic=self.sub_topic,
            name=self.name,
            status=Status.PENDING,
            data=serializer.loads(self.data_json),  # as it reads back (tuples are lists)
            group_id=self.group_id,
            description=self.description,
            priority=self.priority,
            max_attempts=self.max_attempts,
            tags=frozenset(self.tags),
            timeout=self.timeout,
            run_at=run_at,
            created_at=at,
            updated_at=at,
            unique_key=None if self.unique is None else self.unique.key,
            meta=self.meta,
            expires_at=None if self.expires is None else at + timedelta(seconds=self.expires),
            limit_key=self.limit_key,
            limit_max=self.limit_max,
            order_key=self.order_key,
            fair_key=self.fair_key,
        )


@dataclass(frozen=True, slots=True)
class NewGate:
    """A gate between tasks created together (``Store.flow_create``), naming
    them by their places in that call's ``tasks``: those ``waiting`` are created
    waiting, and become pending, given the ``members``' outcomes, in the
    transaction of the last member's ending. In mode ``all_done`` the first
    member failed or cancelled cancels them instead, and every task waiting
    behind them, in its own transaction. A task is a member of one gate at most
    and waits behind one at most."""

    id: str
    members: tuple[int, ...]
    waiting: tuple[int, ...]
    mode: GateMode = GateMode.ALL_ENDED
    shape: GateShape = GateShape.OUTCOMES


@dataclass(frozen=True, slots=True)
class Gate:
    """A gate as stored: how many of its members have not ended yet, and when
    it opened (its waiting tasks released) or broke (they were cancelled)."""

    id: str
    mode: GateMode
    shape: GateShape
    remaining: int
    created_at: datetime
    opened_at: datetime | None = None
    broken_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Placement:
    """A flow's task as the store writes it: created waiting behind ``gate_in``
    (if set), a member of ``gate_out`` (if set)."""

    gate_in: str | None
    gate_out: str | None


@dataclass(frozen=True, slots=True)
class ReserveParams:
    """Reserve up to ``limit`` pending tasks of ``topics`` (``None``: any topic)
    whose tags are all among ``tags``, leased to ``owner`` for ``lease_seconds``."""

    owner: str
    topics: Sequence[str] | None = None
    limit: int = 1
    lease_seconds: float = 30.0
    tags: frozenset[str] = frozenset()
    now: datetime | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class Completion:
    """A holder reports success, with the task's result. ``encoded``, when given,
    is that result's JSON as :func:`tenure.serializer.dumps` returned it (a
    worker checks each result so, and the store then writes that text)."""

    lease: Lease
    result: JSON = None
    encoded: serializer.JsonText | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """A holder reports a failed attempt. With ``retry_in`` the task goes back to
    pending that many seconds later and ``priority_step`` lower; without it the
    task ends failed."""

    lease: Lease
    error: TaskError
    retry_in: float | None = None
    priority_step: int = 1


@dataclass(frozen=True, slots=True)
class TaskFilter:
    """Filters for listing tasks; ``None`` means "any". ``text`` matches tasks
    whose description contains it, taken literally, ASCII letters in any case
    (other characters as they are: the case folding both stores share)."""

    topic: str | None = None
    sub_topic: str | None = None
    status: Status | None = None
    name: str | None = None
    group_id: str | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    text: str | None = None
    meta: tuple[tuple[str, str], ...] | None = None
    """Tasks whose meta holds every one of these (name, value) pairs."""


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a listing. ``cursor`` resumes after it; ``None`` at the end."""

    tasks: list[Task] = field(default_factory=list)
    cursor: str | None = None


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of the event log: a task's transition, or an observer's report.

    ``from_status`` is ``None`` for a task's creation. A report event (``kind``
    ``"report"``) has ``to_status`` ``None``, an empty ``task_id`` and
    ``topic``, the query's key as ``name``, the number of matching tasks as
    ``attempt`` and the scheduler that ran it as ``owner``. ``cursor`` is
    opaque: pass the last one seen as ``event_list(after=...)`` to resume after
    it (``id`` is not an order to page by: on PostgreSQL ids commit out of
    order)."""

    id: int
    task_id: str
    topic: str
    name: str
    from_status: Status | None
    to_status: Status | None
    attempt: int
    owner: str | None
    at: datetime
    cursor: str
    error_type: str | None = None
    """The type of the error the transition wrote (a failed attempt, retried
    or not; a cancel), else ``None``."""
    error_message: str | None = None
    """That error's message."""

    @property
    def kind(self) -> str:
        """``"created"`` for a task's creation, ``"report"`` for an observer's
        report, otherwise the status entered (``"running"``, ``"done"`` …)."""
        if self.to_status is None:
            return REPORT_KIND
        if self.from_status is None:
            return "created"
        return self.to_status.value


REPORT_KIND = "report"
"""The ``to_status`` a report event is stored with, and its ``kind``."""

EVENT_KINDS = frozenset({"created", REPORT_KIND, *(status.value for status in Status)})
"""Every value :attr:`Event.kind` takes."""


@dataclass(frozen=True, slots=True)
class EventPage:
    """One read of the event log. ``held_back``: committed events exist past
    the page that cannot be returned yet, because an older transaction is still
    open (it may still append events before them); read again shortly."""

    events: list[Event]
    held_back: bool = False


@dataclass(frozen=True, slots=True)
class QueueStats:
    """The queue at a glance (``Store.task_stats``): tasks per topic and status,
    per topic since when its longest-waiting runnable pending task has waited
    (the earliest ``run_at``, or creation time for a task without a delay, among
    the pending tasks runnable at ``at``), and how many tasks ended per topic and
    way (done, failed, cancelled) from ``since`` on."""

    at: datetime
    since: datetime
    counts: dict[str, dict[Status, int]]
    oldest_pending: dict[str, datetime]
    endings: dict[str, dict[Status, int]]

    def total(self, status: Status) -> int:
        """Tasks in ``status``, all topics together."""
        return sum(per_status.get(status, 0) for per_status in self.counts.values())


@dataclass(frozen=True, slots=True)
class Backlog:
    """What retention has yet to delete (``Store.retention_backlog``): the
    finished tasks and the events older than the retention, each counted up to
    ``cap`` (a count equal to it means at least that many)."""

    tasks: int
    events: int
    cap: int

    @property
    def rows(self) -> int:
        """Tasks and events together."""
        return self.tasks + self.events


@dataclass(frozen=True, slots=True)
class RunTimes:
    """How long the recent runs of one task name took (``Store.task_run_times``):
    how many runs were sampled, the 99th percentile of their durations in
    seconds (nearest rank: at least 99% of them took no longer), and the
    shortest lease they ran under (``None`` if none was recorded)."""

    name: str
    runs: int
    p99: float
    lease: float | None


@dataclass(frozen=True, slots=True)
class TableKey:
    """One of tenure's tables as the database holds it (``Store.table_keys``):
    its schema, whether it has a primary key, and its replica identity
    (PostgreSQL's ``default``, ``nothing``, ``full`` or ``index``), which is
    what logical replication and change capture need to update or delete a row;
    and whether autovacuum may vacuum it (``False`` when the table's storage
    parameters say ``autovacuum_enabled=false``), which is what keeps a queue's
    dead rows from piling up."""

    schema: str
    name: str
    primary_key: bool
    replica_identity: str
    autovacuum: bool

    @property
    def replicable(self) -> bool:
        """Whether a publication can carry its updates and deletes: a primary
        key under the default identity, or an identity declared otherwise."""
        if self.replica_identity == "default":
            return self.primary_key
        return self.replica_identity in ("full", "index")


@dataclass(frozen=True, slots=True)
class MinuteRate:
    """How many tasks entered each status in one minute (``Store.task_rates``):
    ``minute`` is its start, in UTC; every status is a key, zero when none
    entered it. A creation enters pending; done, failed and cancelled are the
    endings."""

    minute: datetime
    entered: dict[Status, int]


@dataclass(frozen=True, slots=True)
class GroupProgress:
    """A group of tasks as a whole (``Store.task_groups``): how many of its
    tasks are in each status (every status a key, zero when none is), and when
    its first task was created."""

    group_id: str
    counts: dict[Status, int]
    created_at: datetime

    @property
    def total(self) -> int:
        """Every task of the group."""
        return sum(self.counts.values())


@dataclass(frozen=True, slots=True)
class Report:
    """The latest result of an observer query: the tasks that matched it when
    it ran for ``slot`` (the scheduled time; ``run_at`` is when it ran), the
    first ``len(task_ids)`` of them by id, and how many matched in all."""

    key: str
    slot: datetime
    run_at: datetime
    owner: str
    query: dict[str, Any]
    task_ids: tuple[str, ...]
    total: int


@dataclass(frozen=True, slots=True)
class TaskState:
    """What a holder's batch write left a task as. Keepalives and endings are
    answered with this rather than the whole task, so a worker never receives
    payloads and results back for each one it writes."""

    id: str
    status: Status
    attempts: int
    record_ver: int

    @classmethod
    def of(cls, task: Task) -> TaskState:
        return cls(task.id, task.status, task.attempts, task.record_ver)


StateOutcome = TaskState | TenureError
"""Per-item result of a batch holder write: the task's new state, or why it was refused."""


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """A worker's row in the registry. ``started_at`` and ``last_seen`` are set by
    the store's clock."""

    id: str
    host: str
    pid: int
    topics: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    pool: str = "threads"
    concurrency: int = 1
    held: int = 0
    started_at: datetime | None = None
    last_seen: datetime | None = None
    scale_to: int | None = None
    """The concurrency an operator asked it to take (``tenure workers scale``),
    which it takes at its next heartbeat."""


@dataclass(frozen=True, slots=True)
class LeaderLease:
    """What a leader names to keep or give up its leadership of ``name``."""

    name: str
    owner: str
    token: int


@dataclass(frozen=True, slots=True)
class LeaderState:
    """A leadership as stored. ``owner`` is ``None`` while it is vacant.
    ``record_ver`` grows with every write, as a task's does: standbys watch it
    with the same skew-proof rule the supervisor applies to task leases."""

    name: str
    owner: str | None
    token: int | None
    record_ver: int
    lease_seconds: float


UNIQUE_COLUMNS = (
    "unique_key",
    "unique_lock",
    "unique_on_conflict",
    "unique_ttl",
    "unique_retry_in",
)


def unique_columns(rule: UniqueRule | None) -> dict[str, str | float | None]:
    """A task row's unique_* columns for ``rule`` (all None without one)."""
    if rule is None:
        return dict.fromkeys(UNIQUE_COLUMNS)
    values = (rule.key, rule.lock.value, rule.on_conflict.value, rule.ttl, rule.retry_in)
    return dict(zip(UNIQUE_COLUMNS, values, strict=True))
