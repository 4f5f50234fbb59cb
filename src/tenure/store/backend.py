"""What each backend provides: how rows are stored, and nothing else.

:class:`~tenure.store.base.Store` validates input, expresses single-item
operations through the batch ones and explains refusals; it leaves the
``_``-prefixed methods below to each backend (SQLite, PostgreSQL). Keeping them
apart from :class:`Store` shows, in one screen, everything a new backend must
write, and keeps the store's public methods readable on their own. Each is named
for the :class:`Store` method it serves (``task_complete_many`` →
``_task_complete_many``), and each dialect names its query the same way. One is
optional: ``_atask_create_many``, for a driver that has async connections.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar, NamedTuple

from tenure.errors import ConfigError
from tenure.store.refusals import Answer
from tenure.store.types import (
    Event,
    EventPage,
    Failure,
    Gate,
    LeaderLease,
    LeaderState,
    NewGate,
    Placement,
    PreparedTask,
    QueueStats,
    Report,
    ReserveParams,
    RunTimes,
    TableKey,
    TaskFilter,
    UniqueLock,
    WorkerInfo,
)
from tenure.task import Lease, Status, Task

Positioned = tuple[int, Task]
"""A task with its position in the store's insertion order (for keyset paging)."""

AFTER_ALL = 2**63 - 1
"""A position after every task: where a newest-first listing starts."""

EventPosition = tuple[int, int]
"""A place in the event log's commit-safe order: (transaction, event id)."""

GroupTally = tuple[str, Status, int, datetime]
"""One group's tasks in one status: (group id, status, how many, the earliest
``created_at`` among them)."""


class Listing(NamedTuple):
    """A page of tasks, and where a listing with ``scan`` stopped examining:
    the position of the last task it examined when it used up its ``scan``
    before filling the page, else ``None`` (it reached the end, or the page is
    full and resumes after its last task)."""

    rows: list[Positioned]
    examined_to: int | None = None


class EventRead(NamedTuple):
    """A page of the event log, and the position of the newest event pruned."""

    page: EventPage
    pruned_to: EventPosition


class Backend(ABC):
    """The storage operations a backend implements; :class:`Store` calls them
    with input that is already validated."""

    caller_connection: ClassVar[str] = "a connection of the store's own driver"
    """What a create's ``connection`` is, named in the errors that refuse one."""
    prune_batch: ClassVar[int] = 5_000
    """Rows one retention statement deletes at most: as many as the store
    deletes while its other writers wait no longer than they notice."""
    prune_rest: ClassVar[float] = 0.0
    """After each retention batch, a rest this many times the batch's own time,
    so that writers kept waiting by it (on a store with one write lock) take
    the lock before the next batch does."""

    @abstractmethod
    def _task_create_many(
        self, tasks: list[PreparedTask], now: datetime | None, connection: Any
    ) -> list[Task]: ...

    @abstractmethod
    def _flow_create(
        self,
        tasks: list[PreparedTask],
        placements: list[Placement],
        gates: list[NewGate],
        now: datetime | None,
        connection: Any,
    ) -> list[Task]:
        """Write ``gates`` and ``tasks`` (each placed as ``placements`` says,
        waiting when it has a ``gate_in``), all or nothing."""

    @abstractmethod
    def _gate_get(self, gate_id: str) -> Gate | None: ...

    async def _atask_create_many(
        self, tasks: list[PreparedTask], now: datetime | None, connection: Any
    ) -> list[Task]:
        """Write ``tasks`` on the caller's async connection, in its transaction.
        Optional: a backend whose driver has no async connections refuses."""
        raise ConfigError(
            f"{type(self).__name__} cannot write on an async connection "
            f"({type(connection).__module__}.{type(connection).__qualname__}): to enqueue in "
            f"your transaction, pass {self.caller_connection} to enqueue(); aenqueue() "
            "without connection= writes in a transaction of its own"
        )

    @abstractmethod
    def _unique_lock_list(self, limit: int, now: datetime | None) -> list[UniqueLock]: ...

    @abstractmethod
    def _unique_lock_prune(self, now: datetime | None) -> int: ...

    @abstractmethod
    def _task_get(self, task_id: str) -> Task | None: ...

    @abstractmethod
    def _task_list_group(self, group_id: str) -> list[Task]: ...

    @abstractmethod
    def _task_list(
        self, filters: TaskFilter, after: int, limit: int, newest_first: bool, scan: int | None
    ) -> Listing: ...

    @abstractmethod
    def _task_list_leased(
        self, topics: Sequence[str] | None, after: int, limit: int
    ) -> list[Positioned]: ...

    @abstractmethod
    def _event_list(self, after: EventPosition, limit: int) -> EventRead: ...

    @abstractmethod
    def _event_tail(self, before: EventPosition, limit: int) -> list[Event]: ...

    @abstractmethod
    def _task_reserve(self, params: ReserveParams) -> list[Task]: ...

    # The holder writes answer with whole tasks, or with their states if ``brief``.

    @abstractmethod
    def _leases_lost(self, leases: list[Lease]) -> list[str]: ...

    @abstractmethod
    def _lease_extend_many(
        self, leases: list[Lease], lease_seconds: float, now: datetime | None, brief: bool
    ) -> list[Answer]: ...

    @abstractmethod
    def _task_complete_in(
        self, lease: Lease, result: str, now: datetime | None, connection: Any
    ) -> Answer: ...

    @abstractmethod
    def _task_complete_many(
        self, completions: list[tuple[Lease, str]], now: datetime | None, brief: bool
    ) -> list[Answer]: ...

    @abstractmethod
    def _task_fail_many(
        self, failures: list[Failure], now: datetime | None, brief: bool
    ) -> list[Answer]: ...

    @abstractmethod
    def _task_snooze(self, lease: Lease, seconds: float, now: datetime | None) -> Answer: ...

    @abstractmethod
    def _task_release(self, lease: Lease, now: datetime | None) -> Answer: ...

    @abstractmethod
    def _task_progress(
        self, lease: Lease, progress: float, note: str | None, now: datetime | None
    ) -> Answer: ...

    @abstractmethod
    def _task_cancel_held(self, lease: Lease, error: str, now: datetime | None) -> Answer: ...

    @abstractmethod
    def _task_revoke(self, task_id: str, record_ver: int, now: datetime | None) -> Task | None: ...

    @abstractmethod
    def _admin_transition(self, task_id: str, target: Status, now: datetime | None) -> Task: ...

    @abstractmethod
    def _task_count(self, filters: TaskFilter) -> int: ...

    @abstractmethod
    def _clock_now(self) -> datetime: ...

    @abstractmethod
    def _task_prune(
        self, older_than: float, limit: int, now: datetime | None, statuses: list[str]
    ) -> int: ...

    @abstractmethod
    def _event_prune(self, older_than: float, limit: int, now: datetime | None) -> int: ...

    @abstractmethod
    def _task_find(self, prefix: str) -> list[str]: ...

    @abstractmethod
    def _task_last_id(self, prefix: str) -> str | None: ...

    @abstractmethod
    def _task_events(self, task_id: str) -> list[Event]: ...

    @abstractmethod
    def _task_transition_totals(self) -> dict[str, dict[Status, int]]: ...

    @abstractmethod
    def _task_stats(self, now: datetime, since: datetime) -> QueueStats: ...

    @abstractmethod
    def _task_rates(
        self, since: datetime, until: datetime, topic: str | None
    ) -> dict[datetime, dict[Status, int]]: ...

    @abstractmethod
    def _task_groups(self, limit: int, scan: int) -> list[GroupTally]: ...

    @abstractmethod
    def _retention_backlog(
        self, older_than: float, cap: int, now: datetime | None
    ) -> tuple[int, int]: ...

    # What ``tenure doctor`` reads (see :mod:`tenure.store.operating`).

    @abstractmethod
    def _task_run_times(self, sample: int) -> list[RunTimes]: ...

    @abstractmethod
    def _leader_silence(self, name: str) -> float | None: ...

    @abstractmethod
    def _database_settings(self) -> dict[str, str]: ...

    @abstractmethod
    def _table_keys(self) -> list[TableKey]: ...

    @property
    def connections_at_most(self) -> int | None:
        """The most connections this store opens to a database server at once
        (its pool and its listener), ``None`` where there is no server whose
        connections it counts (SQLite; PostgreSQL behind a pooler)."""
        return None

    @abstractmethod
    def _report_save(self, report: Report) -> Report | None: ...

    @abstractmethod
    def _report_get(self, key: str) -> Report | None: ...

    @abstractmethod
    def _report_list(self) -> list[Report]: ...

    @abstractmethod
    def _report_prune(self, older_than: float, now: datetime | None) -> int: ...

    @abstractmethod
    def _worker_beat(self, info: WorkerInfo, now: datetime | None) -> WorkerInfo: ...

    @abstractmethod
    def _worker_remove(self, worker_id: str) -> bool: ...

    @abstractmethod
    def _worker_list(self) -> list[WorkerInfo]: ...

    @abstractmethod
    def _worker_prune(self, silent_for: float, now: datetime | None) -> int: ...

    @abstractmethod
    def _leader_acquire(
        self, name: str, owner: str, lease_seconds: float
    ) -> LeaderLease | None: ...

    @abstractmethod
    def _leader_extend(self, lease: LeaderLease, lease_seconds: float) -> LeaderState: ...

    @abstractmethod
    def _leader_get(self, name: str) -> LeaderState | None: ...

    @abstractmethod
    def _leader_revoke(self, name: str, record_ver: int) -> bool: ...

    @abstractmethod
    def _leader_resign(self, lease: LeaderLease) -> bool: ...
