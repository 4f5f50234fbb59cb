"""Conversions between tenure's values and the PostgreSQL store's rows and
query parameters: no I/O here, only shapes.

Batch statements take one array per column (``unnest`` turns them back into
rows), so a batch of any size is one statement with a fixed text.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from psycopg.rows import RowMaker

from tenure import serializer
from tenure.store.backend import EventRead
from tenure.store.cursor import event_cursor
from tenure.store.postgres.arrays import IntArray, TextArray
from tenure.store.types import (
    REPORT_KIND,
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
    TaskState,
    UniqueLock,
    WorkerInfo,
    unique_columns,
)
from tenure.task import TIME_FIELDS, GateMode, GateShape, Lease, LockPhase, Status, Task, TaskError

if TYPE_CHECKING:
    from psycopg import Cursor

Row = dict[str, Any]


def insert_params(tasks: Sequence[PreparedTask], now: datetime | None) -> dict[str, Any]:
    """Parameters of ``insert_task`` for ``tasks``, in order: the rows travel
    as one JSON array, which costs the client a fraction of one array per column."""
    return {
        "now": now,
        "tasks": json.dumps([_insert_row(task) for task in tasks], ensure_ascii=False),
    }


def flow_params(
    tasks: Sequence[PreparedTask], placements: Sequence[Placement], now: datetime | None
) -> dict[str, Any]:
    """:func:`insert_params` for a flow's tasks: each with its gates, and
    waiting when it stands behind one."""
    return {
        "now": now,
        "tasks": json.dumps(
            [
                {
                    **_insert_row(task),
                    "status": "pending" if placed.gate_in is None else "waiting",
                    "gate_in": placed.gate_in,
                    "gate_out": placed.gate_out,
                }
                for task, placed in zip(tasks, placements, strict=True)
            ],
            ensure_ascii=False,
        ),
    }


def gate_params(gates: Sequence[NewGate], now: datetime | None) -> dict[str, Any]:
    """Parameters of ``insert_gates``: each gate with all its members remaining."""
    rows = [
        {"id": g.id, "mode": g.mode.value, "shape": g.shape.value, "remaining": len(g.members)}
        for g in gates
    ]
    return {"now": now, "gates": json.dumps(rows, ensure_ascii=False)}


def gate(row: Row) -> Gate:
    """A gate from its row."""
    return Gate(
        id=row["id"],
        mode=GateMode(row["mode"]),
        shape=GateShape(row["shape"]),
        remaining=row["remaining"],
        created_at=row["created_at"].astimezone(UTC),
        opened_at=utc(row["opened_at"]),
        broken_at=utc(row["broken_at"]),
    )


def insert_one_params(task: PreparedTask, now: datetime | None) -> dict[str, Any]:
    """Parameters of ``insert_one``: the task's row as ``insert_task`` reads it
    (its tags an array: psycopg sends a tuple as a record)."""
    return {**_insert_row(task), "now": now, "tags": TextArray(task.tags)}


def _insert_row(task: PreparedTask) -> dict[str, Any]:
    return {
        "id": task.id,
        "topic": task.topic,
        "sub_topic": task.sub_topic,
        "name": task.name,
        "data": task.data_json,
        "group_id": task.group_id,
        "description": task.description,
        "priority": task.priority,
        "max_attempts": task.max_attempts,
        "tags": task.tags,
        "timeout": task.timeout,
        "run_at": None if task.run_at is None else task.run_at.isoformat(),
        "delay": task.delay,
        **unique_columns(task.unique),
        "meta": task.meta_json,
        "expires": task.expires,
        "limit_key": task.limit_key,
        "limit_max": task.limit_max,
        "order_key": task.order_key,
        "fair_key": task.fair_key,
    }


def lease_params(leases: Sequence[Lease], now: datetime | None) -> dict[str, Any]:
    """The ``held`` arrays every holder write takes."""
    return {
        "now": now,
        "ids": TextArray([lease.task_id for lease in leases]),
        "tokens": IntArray([lease.token for lease in leases]),
        "owners": TextArray([lease.owner for lease in leases]),
    }


def prefix_pattern(prefix: str) -> str:
    """A LIKE pattern for the ids beginning with ``prefix``, its characters literal."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def moment_param(moment: datetime | None) -> datetime | None:
    """A time as the statements take it: as it is (``timestamptz``)."""
    return moment


def worker_params(info: WorkerInfo, now: datetime | None) -> dict[str, Any]:
    """Parameters of ``worker_beat``; topics and tags sorted, as SQLite keeps them."""
    return {
        "now": now,
        "id": info.id,
        "host": info.host,
        "pid": info.pid,
        "topics": sorted(info.topics),
        "tags": sorted(info.tags),
        "pool": info.pool,
        "concurrency": info.concurrency,
        "held": info.held,
    }


def leader_params(lease: LeaderLease) -> dict[str, Any]:
    """The name, owner and token every leader's write names."""
    return {"name": lease.name, "owner": lease.owner, "token": lease.token}


def failure_columns(failures: Sequence[Failure]) -> dict[str, list[Any]]:
    """The per-item arrays of ``fail_tasks``, beside the lease arrays."""
    return {
        "errors": TextArray([json.dumps(f.error.stored()) for f in failures]),
        "retry_ins": [f.retry_in for f in failures],
        "priority_steps": [f.priority_step for f in failures],
    }


def utc(moment: datetime | None) -> datetime | None:
    """Times in UTC whatever the session's TimeZone (a caller's connection may
    have another), like every other store."""
    if moment is None or moment.tzinfo is UTC:
        return moment
    return moment.astimezone(UTC)


def task(row: Row) -> Task:
    """A task from a ``tasks`` row (jsonb and text[] already decoded by psycopg)."""
    return _task_of(list(_in_task_order(row)))


def place_and_task(cursor: Cursor[Any]) -> RowMaker[tuple[tuple[int, int, int, int], Task]]:
    """A psycopg row factory for a reservation returning ``task_columns``,
    ``fair_turn`` and ``rank``: each row as its place in the order tasks are
    taken (rank, highest first: the priority, raised by a topic's ageing; then
    priority, turn, age) and its task, taken from the row's values by
    position. A worker reads hundreds of tasks per reservation: a dict per
    row, as the store's other reads make, would be built only to be taken
    apart."""
    names = [column.name for column in cursor.description or ()]
    in_task_order = itemgetter(*(names.index(name) for name in TASK_FIELDS))
    at_rank, at_priority, at_turn, at_seq = map(
        names.index, ("rank", "priority", "fair_turn", "seq")
    )

    def make(values: Sequence[Any]) -> tuple[tuple[int, int, int, int], Task]:
        place = (-values[at_rank], -values[at_priority], values[at_turn], values[at_seq])
        return place, _task_of(list(in_task_order(values)))

    return make


def _task_of(values: list[Any]) -> Task:
    """A task from its column values in the order of :class:`Task`'s fields:
    taken all at once, and only a few converted."""
    for index, convert in _CONVERSIONS:
        values[index] = convert(values[index])
    return Task(*values)


TASK_FIELDS = tuple(field.name for field in dataclasses.fields(Task))
"""The columns a task is read from: the ``tasks`` table's, named as its fields."""

_in_task_order = itemgetter(*TASK_FIELDS)


def status(value: str) -> Status:
    """A stored status, found by its value (``Status(value)`` for an unknown one)."""
    return _STATUSES.get(value) or Status(value)


_STATUSES = {str(s): s for s in Status}
_NO_TAGS: frozenset[str] = frozenset()


def _tags(tags: list[str]) -> frozenset[str]:
    return frozenset(tags) if tags else _NO_TAGS


def _error(value: dict[str, Any] | None) -> TaskError | None:
    return None if value is None else TaskError.from_json(value)


def _errors(value: list[dict[str, Any]] | None) -> tuple[TaskError, ...]:
    return () if value is None else tuple(TaskError.from_json(entry) for entry in value)


def _meta(value: dict[str, str] | None) -> dict[str, str] | None:
    """By name, as it was written (jsonb keeps its keys in an order of its own)."""
    return None if value is None else dict(sorted(value.items()))


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "status": status,
    "error": _error,
    "errors": _errors,
    "meta": _meta,
    "tags": _tags,
    **dict.fromkeys(TIME_FIELDS, utc),
}
_CONVERSIONS = tuple((TASK_FIELDS.index(name), convert) for name, convert in _CONVERTERS.items())
"""Where in a task's values a column psycopg does not give as the field's value
is, and what makes it that."""


def task_state(row: Row) -> TaskState:
    """What a ``_brief`` holder write answers for a task."""
    return TaskState(row["id"], status(row["status"]), row["attempts"], row["record_ver"])


def created(task: PreparedTask, at: datetime, run_at: datetime | None) -> Task:
    """A task as its insert made it, ``at`` (in UTC), runnable from ``run_at``
    (in any zone: as a caller's session or the caller itself gave it)."""
    return task.created(at, utc(run_at))


def event_params(after: tuple[int, int], limit: int) -> dict[str, Any]:
    """list_events' parameters: the xid goes as text, cast to xid8 by the query,
    since xid8 reaches past bigint and psycopg has no type for it."""
    return {"after_xid": str(after[0]), "after_id": after[1], "limit": limit}


def event(row: Row) -> Event:
    from_status, to_status = row["from_status"], row["to_status"]
    at = utc(row["at"])
    assert at is not None  # NOT NULL column
    return Event(
        id=row["id"],
        task_id=row["task_id"],
        topic=row["topic"],
        name=row["name"],
        from_status=None if from_status is None else Status(from_status),
        to_status=None if to_status == REPORT_KIND else Status(to_status),
        attempt=row["attempt"],
        owner=row["owner"],
        at=at,
        cursor=event_cursor(int(row["xid_text"]), row["id"]),
        error_type=row["error_type"],
        error_message=row["error_message"],
    )


def event_read(found: list[Row]) -> EventRead:
    """list_events' rows: one per event, each also carrying (as the only row
    when there is no event) how far retention pruned and whether events wait
    behind a transaction still open."""
    log = found[0]
    events = [event(row) for row in found if row["id"] is not None]
    pruned_to = (int(log["pruned_xid_text"]), log["pruned_id"])
    return EventRead(EventPage(events, held_back=log["held_back"]), pruned_to)


def queue_stats(
    now: datetime, since: datetime, counts: list[Row], waiting: list[Row], endings: list[Row]
) -> QueueStats:
    """``Store.task_stats`` from the rows of stats_counts, stats_oldest_pending and
    stats_endings."""
    oldest = {row["topic"]: utc(row["since"]) for row in waiting}
    waits = {topic: at for topic, at in oldest.items() if at is not None}
    return QueueStats(now, since, per_topic(counts), waits, per_topic(endings))


def per_topic(found: list[Row]) -> dict[str, dict[Status, int]]:
    """Rows of (topic, status, count) as counts per topic and status."""
    counts: dict[str, dict[Status, int]] = {}
    for row in found:
        counts.setdefault(row["topic"], {})[Status(row["status"])] = row["count"]
    return counts


def report(row: Row) -> Report:
    slot, run_at = utc(row["slot"]), utc(row["run_at"])
    assert slot is not None  # NOT NULL
    assert run_at is not None  # NOT NULL
    return Report(
        key=row["key"],
        slot=slot,
        run_at=run_at,
        owner=row["owner"],
        query=row["query"],
        task_ids=tuple(row["task_ids"]),
        total=row["total"],
    )


def report_params(report: Report) -> dict[str, Any]:
    return {
        "key": report.key,
        "slot": report.slot,
        "owner": report.owner,
        "query": serializer.dumps(report.query, "query"),
        "task_ids": list(report.task_ids),
        "total": report.total,
    }


def worker(row: Row) -> WorkerInfo:
    """A worker from a ``workers`` row."""
    return WorkerInfo(
        id=row["id"],
        host=row["host"],
        pid=row["pid"],
        topics=tuple(row["topics"]),
        tags=tuple(row["tags"]),
        pool=row["pool"],
        concurrency=row["concurrency"],
        held=row["held"],
        started_at=utc(row["started_at"]),
        last_seen=utc(row["last_seen"]),
        scale_to=row["scale_to"],
    )


def leader_lease(row: Row) -> LeaderLease:
    """The lease ``leader_acquire`` granted."""
    return LeaderLease(name=row["name"], owner=row["owner"], token=row["token"])


def leader(row: Row) -> LeaderState:
    """A leadership from a ``leaders`` row."""
    return LeaderState(
        name=row["name"],
        owner=row["owner"],
        token=row["token"],
        record_ver=row["record_ver"],
        lease_seconds=row["lease_seconds"],
    )


def unique_lock(row: Row) -> UniqueLock:
    """A held lock from a ``unique_locks`` row."""
    return UniqueLock(
        key=row["key"],
        task_id=row["task_id"],
        lock=LockPhase(row["lock"]),
        expires_at=moment(row, "expires_at"),
        created_at=moment(row, "created_at"),
    )


def moment(row: Row, column: str) -> datetime:
    """A NOT NULL timestamptz column, in UTC."""
    at = utc(row[column])
    assert at is not None  # NOT NULL column
    return at
