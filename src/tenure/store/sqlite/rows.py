"""Conversions between tenure's values and the SQLite store's rows and query
parameters: no I/O here, only shapes.

SQLite keeps times as Unix epoch seconds (REAL) and lists (tags, topics,
statuses) as JSON text; these functions turn them into tenure's datetimes,
tuples and frozensets and back, as ``postgres/rows.py`` does for PostgreSQL.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from tenure import serializer
from tenure.clock import from_epoch, to_epoch
from tenure.store.cursor import event_cursor
from tenure.store.types import (
    REPORT_KIND,
    Event,
    Failure,
    LeaderLease,
    LeaderState,
    PreparedTask,
    Report,
    TaskFilter,
    TaskState,
    UniqueLock,
    WorkerInfo,
    unique_columns,
)
from tenure.task import LockPhase, Status, Task, TaskError


def filter_params(filters: TaskFilter) -> dict[str, Any]:
    return {
        "topic": filters.topic,
        "sub_topic": filters.sub_topic,
        "status": None if filters.status is None else str(filters.status),
        "name": filters.name,
        "group_id": filters.group_id,
        "text": filters.text,
        "created_from": epoch(filters.created_from),
        "created_to": epoch(filters.created_to),
    }


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
    )


def status_list(statuses: frozenset[Status]) -> str:
    return json.dumps(sorted(str(s) for s in statuses))


def epoch(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def moment(seconds: float | None) -> datetime | None:
    return None if seconds is None else from_epoch(seconds)


def insert_params(task: PreparedTask, now: float) -> dict[str, Any]:
    run_at = task.run_at.timestamp() if task.run_at is not None else None
    if run_at is None and task.delay > 0:
        run_at = now + task.delay
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
        "tags": json.dumps(list(task.tags)),
        "timeout": task.timeout,
        "run_at": run_at,
        "now": now,
        **unique_columns(task.unique),
    }


def failure_params(failure: Failure) -> dict[str, Any]:
    return {
        "retry_in": failure.retry_in,
        "priority_step": failure.priority_step,
        "error": json.dumps(failure.error.to_json()),
    }


def task_state(row: sqlite3.Row) -> TaskState:
    return TaskState(row["id"], Status(row["status"]), row["attempts"], row["record_ver"])


def task(row: sqlite3.Row) -> Task:
    error = row["error"]
    return Task(
        id=row["id"],
        topic=row["topic"],
        sub_topic=row["sub_topic"],
        name=row["name"],
        status=Status(row["status"]),
        data=serializer.loads(row["data"]),
        result=serializer.loads(row["result"]),
        error=None if error is None else TaskError.from_json(json.loads(error)),
        group_id=row["group_id"],
        description=row["description"],
        priority=row["priority"],
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        tags=frozenset(json.loads(row["tags"])),
        assignee=row["assignee"],
        timeout=row["timeout"],
        run_at=moment(row["run_at"]),
        created_at=moment(row["created_at"]),
        updated_at=moment(row["updated_at"]),
        started_at=moment(row["started_at"]),
        finished_at=moment(row["finished_at"]),
        duration=row["duration"],
        lease_owner=row["lease_owner"],
        lease_expires_at=moment(row["lease_expires_at"]),
        lease_token=row["lease_token"],
        lease_seconds=row["lease_seconds"],
        record_ver=row["record_ver"],
        unique_key=row["unique_key"],
    )


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
