"""Tasks, events, reports, workers and the queue's figures as plain JSON values:
the one home of the shapes that ``tenure … --json`` prints and the HTTP API
answers with, so a script can move from one to the other.
:mod:`tenure.http.openapi` derives each one's schema from the dataclass it is
written from, and the test suite checks every API response against it: a key
written here that the dataclass does not have fails those tests.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from tenure.store.flowcontrol import PausedTopic, TopicAgeing, TopicLimit, TopicRate
from tenure.store.types import Event, QueueStats, Report, UniqueLock, WorkerInfo
from tenure.task import Task

JsonObject = dict[str, Any]


def _plain(value: object) -> object:
    return value.isoformat() if isinstance(value, datetime) else value


def task_json(task: Task) -> JsonObject:
    """A task, every field of it, times in ISO 8601 (``tenure show --json``)."""
    fields = {name: getattr(task, name) for name in Task.__dataclass_fields__}
    fields["status"] = task.status.value
    fields["tags"] = sorted(task.tags)
    fields["error"] = None if task.error is None else task.error.to_json()
    fields["errors"] = [error.to_json() for error in task.errors]
    return {name: _plain(value) for name, value in fields.items()}


def event_json(event: Event) -> JsonObject:
    """One event of the log (``tenure events --json``)."""
    return {
        "cursor": event.cursor,
        "kind": event.kind,
        "task_id": event.task_id,
        "topic": event.topic,
        "name": event.name,
        "from": None if event.from_status is None else event.from_status.value,
        "to": None if event.to_status is None else event.to_status.value,
        "attempt": event.attempt,
        "owner": event.owner,
        "at": event.at.isoformat(),
        "error_type": event.error_type,
        "error_message": event.error_message,
    }


def stats_json(stats: QueueStats, workers_alive: int) -> JsonObject:
    """The queue at a glance (``tenure stats --json``)."""
    return {
        "at": stats.at.isoformat(),
        "since": stats.since.isoformat(),
        "counts": {t: {s.value: n for s, n in c.items()} for t, c in stats.counts.items()},
        "oldest_pending": {t: m.isoformat() for t, m in stats.oldest_pending.items()},
        "endings": {t: {s.value: n for s, n in c.items()} for t, c in stats.endings.items()},
        "workers_alive": workers_alive,
    }


def report_json(report: Report) -> JsonObject:
    """An observer's latest report (``tenure report --json``)."""
    return {
        "key": report.key,
        "slot": report.slot.isoformat(),
        "run_at": report.run_at.isoformat(),
        "owner": report.owner,
        "query": report.query,
        "total": report.total,
        "task_ids": list(report.task_ids),
    }


def lock_json(lock: UniqueLock) -> JsonObject:
    """A unique lock held (``tenure locks --json``)."""
    return {name: _plain(value) for name, value in dataclasses.asdict(lock).items()}


def paused_json(paused: PausedTopic) -> JsonObject:
    """A paused topic (``tenure paused --json``, ``GET /api/topics/paused``)."""
    return {"topic": paused.topic, "paused_at": _plain(paused.paused_at)}


def limit_json(limit: TopicLimit) -> JsonObject:
    """A topic's limit (``tenure limits --json``)."""
    return {"topic": limit.topic, "max_running": limit.max_running, "set_at": _plain(limit.set_at)}


def rate_json(rate: TopicRate) -> JsonObject:
    """A topic's rate (``tenure rates --json``)."""
    return {"topic": rate.topic, "max_starts": rate.max_starts, "per_seconds": rate.per_seconds,
            "set_at": _plain(rate.set_at)}  # fmt: skip


def lifted_json(setting: type[TopicLimit | TopicRate | TopicAgeing], topic: str) -> JsonObject:
    """A topic's setting once lifted: its topic, every other field null (the
    answer of ``tenure limit TOPIC --off --json`` and of the HTTP API)."""
    return {field.name: None for field in dataclasses.fields(setting)} | {"topic": topic}


def ageing_json(ageing: TopicAgeing) -> JsonObject:
    """A topic's priority ageing (``tenure aged --json``)."""
    return {"topic": ageing.topic, "every_seconds": ageing.every_seconds, "most": ageing.most,
            "set_at": _plain(ageing.set_at)}  # fmt: skip


def worker_json(worker: WorkerInfo) -> JsonObject:
    """A live worker as its last heartbeat described it (``tenure workers --json``)."""
    fields = dataclasses.asdict(worker)
    fields["topics"] = list(worker.topics)
    fields["tags"] = list(worker.tags)
    return {name: _plain(value) for name, value in fields.items()}
