"""Conversions between tenure's values and the SQLite store's rows and query
parameters: no I/O here, only shapes.

SQLite keeps times as Unix epoch seconds (REAL) and lists (tags, topics,
statuses) as JSON text; these functions turn them into tenure's datetimes,
tuples and frozensets and back, as ``postgres/rows.py`` does for PostgreSQL.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any

from tenure import serializer
from tenure.clock import from_epoch, to_epoch
from tenure.store.cursor import event_cursor
from tenure.store.types import (
    REPORT_KIND,
    UNIQUE_COLUMNS,
    Event,
    Failure,
    Gate,
    LeaderLease,
    LeaderState,
    NewGate,
    Placement,
    PreparedTask,
    Report,
    TaskState,
    UniqueLock,
    WorkerInfo,
    unique_columns,
)
from tenure.task import TIME_FIELDS, GateMode, GateShape, LockPhase, Status, Task, TaskError


def prefix_pattern(prefix: str) -> str:
    """A GLOB pattern for the ids beginning with ``prefix``, its characters
    literal: GLOB, unlike SQLite's LIKE, matches case for case, so it walks the
    id's index as a range."""
    return "".join(f"[{char}]" if char in "*?[" else char for char in prefix) + "*"


def leader_params(lease: LeaderLease) -> dict[str, Any]:
    return {"name": lease.name, "owner": lease.owner, "token": lease.token}


def leader(row: sqlite3.Row) -> LeaderState:
    return LeaderState(
        name=row["name"],
        owner=row["owner"],
        token=row["token"],
        record_ver=row["record_ver"],
        lease_seconds=row["lease_seconds"],
    )


def worker(row: sqlite3.Row) -> WorkerInfo:
    return WorkerInfo(
        id=row["id"],
        host=row["host"],
        pid=row["pid"],
        topics=tuple(json.loads(row["topics"])),
        tags=tuple(json.loads(row["tags"])),
        pool=row["pool"],
        concurrency=row["concurrency"],
        held=row["held"],
        started_at=from_epoch(row["started_at"]),
        last_seen=from_epoch(row["last_seen"]),
        scale_to=row["scale_to"],
    )


def status_list(statuses: frozenset[Status]) -> str:
    return json.dumps(sorted(str(s) for s in statuses))


def epoch(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


moment_param = epoch
"""A time as the statements take it: seconds since the epoch."""


def moment(seconds: float | None) -> datetime | None:
    """``from_epoch``, inline: a task read has six of these."""
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


INSERT_COLUMNS = (
    "id",
    "topic",
    "sub_topic",
    "name",
    "data",
    "group_id",
    "description",
    "priority",
    "max_attempts",
    "tags",
    "timeout",
    "run_at",
    "now",
    *UNIQUE_COLUMNS,
    "status",
    "gate_in",
    "gate_out",
    "meta",
    "expires_at",
    "limit_key",
    "limit_max",
    "order_key",
    "fair_key",
)
"""The values of ``insert_task``, in the order of its placeholders ?1 … ?27."""
RUN_AT = INSERT_COLUMNS.index("run_at")


def insert_row(
    task: PreparedTask, now: float, where: tuple[Any, ...] = ("pending", None, None)
) -> tuple[Any, ...]:
    """``insert_task``'s values for ``task`` created ``now``; ``where``, a
    flow's task's status and gates (:func:`flow_row`)."""
    return (
        task.id,
        task.topic,
        task.sub_topic,
        task.name,
        task.data_json,
        task.group_id,
        task.description,
        task.priority,
        task.max_attempts,
        _tags_json(task.tags),
        task.timeout,
        run_at_of(task, now),
        now,
        *(_NO_UNIQUE if task.unique is None else unique_columns(task.unique).values()),
        *where,
        task.meta_json,
        None if task.expires is None else now + task.expires,
        task.limit_key,
        task.limit_max,
        task.order_key,
        task.fair_key,
    )


def flow_row(task: PreparedTask, now: float, placed: Placement) -> tuple[Any, ...]:
    """``insert_task``'s values for a flow's task: waiting behind a gate, if it is."""
    status = "pending" if placed.gate_in is None else "waiting"
    return insert_row(task, now, (status, placed.gate_in, placed.gate_out))


def gate_row(gate: NewGate, now: float) -> dict[str, Any]:
    """``insert_gates``' values: the gate with all its members remaining."""
    return {
        "id": gate.id,
        "mode": gate.mode.value,
        "shape": gate.shape.value,
        "remaining": len(gate.members),
        "now": now,
    }


def gate(row: sqlite3.Row) -> Gate:
    """A gate from its row."""
    return Gate(
        id=row["id"],
        mode=GateMode(row["mode"]),
        shape=GateShape(row["shape"]),
        remaining=row["remaining"],
        created_at=from_epoch(row["created_at"]),
        opened_at=moment(row["opened_at"]),
        broken_at=moment(row["broken_at"]),
    )


def run_at_of(task: PreparedTask, now: float) -> float | None:
    """When ``task``, created ``now``, may run: its run_at, else ``now`` plus
    its delay (``None``: at once)."""
    if task.run_at is not None:
        return task.run_at.timestamp()
    return now + task.delay if task.delay > 0 else None


_NO_UNIQUE = tuple(unique_columns(None).values())


@functools.lru_cache(maxsize=256)
def _tags_json(tags: tuple[str, ...]) -> str:
    """A task's tags as stored: encoded once per set of tags (a batch's tasks
    usually share theirs)."""
    return json.dumps(list(tags))


def failure_params(failure: Failure) -> dict[str, Any]:
    return {
        "retry_in": failure.retry_in,
        "priority_step": failure.priority_step,
        "error": json.dumps(failure.error.stored()),
    }


def task_state(row: sqlite3.Row) -> TaskState:
    return TaskState(row["id"], status(row["status"]), row["attempts"], row["record_ver"])


def status(value: str) -> Status:
    """A stored status, found by its value (``Status(value)`` for an unknown one)."""
    return _STATUSES.get(value) or Status(value)


_STATUSES = {str(s): s for s in Status}


def task(row: sqlite3.Row) -> Task:
    """A task from a ``tenure_tasks`` row. A worker reads hundreds per reservation: a
    ``sqlite3.Row`` looks a name up by comparing it with each column's, so the
    row's values are taken by position, all at once, in the order of
    :class:`Task`'s fields, and only the columns kept as text are converted."""
    values = list(_in_task_order(row)(row))
    for index, convert in _CONVERSIONS:
        values[index] = convert(values[index])
    return Task(*values)


TASK_FIELDS = tuple(field.name for field in dataclasses.fields(Task))
"""The columns a task is read from: the ``tenure_tasks`` table's, named as its fields."""


def _tags(text: str) -> frozenset[str]:
    return _NO_TAGS if text == "[]" else frozenset(json.loads(text))


def _error(text: str | None) -> TaskError | None:
    return None if text is None else TaskError.from_json(json.loads(text))


def _meta(text: str | None) -> dict[str, str] | None:
    return None if text is None else dict(json.loads(text))


def _errors(text: str | None) -> tuple[TaskError, ...]:
    return () if text is None else tuple(TaskError.from_json(e) for e in json.loads(text))


_NO_TAGS: frozenset[str] = frozenset()
_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "status": status,
    "data": serializer.loads,
    "result": serializer.loads,
    "upstream": serializer.loads,
    "error": _error,
    "errors": _errors,
    "meta": _meta,
    "tags": _tags,
    **dict.fromkeys(TIME_FIELDS, moment),
}
_CONVERSIONS = tuple((TASK_FIELDS.index(name), convert) for name, convert in _CONVERTERS.items())
"""Where in a task's values a column kept as text or epoch is, and what makes it
the field's value."""
_READERS: dict[tuple[str, ...], Callable[[sqlite3.Row], tuple[Any, ...]]] = {}
"""A reader of a task's values per set of columns (one per query that reads tasks)."""


def _in_task_order(row: sqlite3.Row) -> Callable[[sqlite3.Row], tuple[Any, ...]]:
    """What takes ``row``'s values in :data:`TASK_FIELDS` order, made once per
    query's columns (names compared without case, as ``sqlite3.Row`` does)."""
    columns = tuple(row.keys())
    reader = _READERS.get(columns)
    if reader is None:
        lowered = [name.lower() for name in columns]
        missing = [name for name in TASK_FIELDS if name not in lowered]
        if missing:
            raise IndexError(f"no column {missing[0]!r} to read a task from")
        reader = itemgetter(*(lowered.index(name) for name in TASK_FIELDS))
        if len(_READERS) < MAX_READERS:
            _READERS[columns] = reader
    return reader


MAX_READERS = 64
"""Column sets remembered at most (the store's queries have a handful)."""


def unique_lock(row: sqlite3.Row) -> UniqueLock:
    return UniqueLock(
        key=row["key"],
        task_id=row["task_id"],
        lock=LockPhase(row["lock"]),
        expires_at=from_epoch(row["expires_at"]),
        created_at=from_epoch(row["created_at"]),
    )


def event(row: sqlite3.Row) -> Event:
    from_status, to_status = row["from_status"], row["to_status"]
    return Event(
        id=row["id"],
        task_id=row["task_id"],
        topic=row["topic"],
        name=row["name"],
        from_status=None if from_status is None else Status(from_status),
        to_status=None if to_status == REPORT_KIND else Status(to_status),
        attempt=row["attempt"],
        owner=row["owner"],
        at=from_epoch(row["at"]),
        cursor=event_cursor(0, row["id"]),
        error_type=row["error_type"],
        error_message=row["error_message"],
    )


def report(row: sqlite3.Row) -> Report:
    return Report(
        key=row["key"],
        slot=from_epoch(row["slot"]),
        run_at=from_epoch(row["run_at"]),
        owner=row["owner"],
        query=json.loads(row["query"]),
        task_ids=tuple(json.loads(row["task_ids"])),
        total=row["total"],
    )


def report_params(report: Report, now: float) -> dict[str, Any]:
    return {
        "key": report.key,
        "slot": to_epoch(report.slot),
        "now": now,
        "owner": report.owner,
        "query": serializer.dumps(report.query, "query"),
        "task_ids": json.dumps(list(report.task_ids)),
        "total": report.total,
    }


def in_order_taken(found: list[sqlite3.Row]) -> list[sqlite3.Row]:
    """A reservation's rows in the order the statement took them: by rank (a
    priority's tasks ranked together, by the longest wait among them, as the
    statement ranks them), priority, turn, then age."""
    level: dict[tuple[str, int], int] = {}
    for row in found:
        key = (row["topic"], row["priority"])
        level[key] = max(level.get(key, row["rank"]), row["rank"])
    return sorted(
        found,
        key=lambda row: (
            -level[row["topic"], row["priority"]],
            -row["priority"],
            row["fair_turn"],
            row["seq"],
        ),
    )
