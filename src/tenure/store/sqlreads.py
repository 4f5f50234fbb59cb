"""The reads both SQL stores make the same way, written once.

Each of these is one named statement, the same name in each dialect's
``queries.sql``, whose rows the store's own ``rows`` module turns into
tenure's types (the dialects store times differently, so decoding stays
theirs). A SQL store mixes :class:`SqlReads` in before
:class:`~tenure.store.base.Store` and names its ``rows`` module; what differs
(writes, transactions, the event log's reads) stays in the store's own class.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar, Protocol

from tenure.store.backend import AFTER_ALL, Listing
from tenure.store.types import LeaderState, RunTimes, TaskFilter, WorkerInfo
from tenure.task import Task


class Rows(Protocol):
    """What a SQL store's ``rows`` module provides to the shared reads."""

    def task(self, row: Any) -> Task: ...

    def moment_param(self, moment: datetime | None) -> Any:
        """A time as the dialect's statements take it."""

    def prefix_pattern(self, prefix: str) -> str:
        """The pattern of the ids beginning with ``prefix`` (its characters
        literal), as the dialect's ``find_task_ids`` matches it."""

    def worker(self, row: Any) -> WorkerInfo: ...

    def leader(self, row: Any) -> LeaderState: ...


class SqlReads:
    """The backend methods that are one statement and one decoding in both
    SQL stores. A store provides ``rows`` and ``_read`` (run one named
    statement in a transaction of its own; rows read by column name)."""

    rows: ClassVar[Rows]

    def _read(self, query: str, params: dict[str, Any]) -> Sequence[Any]:
        raise NotImplementedError

    def _task_get(self, task_id: str) -> Task | None:
        found = self._read("get_task", {"id": task_id})
        return self.rows.task(found[0]) if found else None

    def _task_list_group(self, group_id: str) -> list[Task]:
        return [self.rows.task(row) for row in self._read("list_group", {"group_id": group_id})]

    def _task_list(
        self, filters: TaskFilter, after: int, limit: int, newest_first: bool, scan: int | None
    ) -> Listing:
        params = {"after": after, "limit": limit, "scan": scan, **filter_params(filters, self.rows)}
        query = "list_tasks"
        if newest_first:
            query, params["before"] = "list_tasks_newest", after or AFTER_ALL
        found = self._read(query if scan is None else f"{query}_scan", params)
        tasks = [(row["seq"], self.rows.task(row)) for row in found if row["seq"] is not None]
        return Listing(tasks, None if scan is None else found[0]["examined_to"])

    def _task_count(self, filters: TaskFilter) -> int:
        count: int = self._read("count_tasks", filter_params(filters, self.rows))[0]["count"]
        return count

    def _task_find(self, prefix: str) -> list[str]:
        found = self._read("find_task_ids", {"pattern": self.rows.prefix_pattern(prefix)})
        return [row["id"] for row in found]

    def _task_last_id(self, prefix: str) -> str | None:
        found = self._read("last_task_id", {"pattern": self.rows.prefix_pattern(prefix)})
        last: str | None = found[0]["id"] if found else None
        return last

    def _worker_list(self) -> list[WorkerInfo]:
        return [self.rows.worker(row) for row in self._read("worker_list", {})]

    def _leader_get(self, name: str) -> LeaderState | None:
        found = self._read("leader_get", {"name": name})
        return self.rows.leader(found[0]) if found else None

    def _task_run_times(self, sample: int) -> list[RunTimes]:
        found = self._read("task_run_times", {"sample": sample})
        return [RunTimes(row["name"], row["runs"], row["p99"], row["lease"]) for row in found]


def filter_params(filters: TaskFilter, rows: Rows) -> dict[str, Any]:
    """The filter parameters of ``list_tasks`` and ``count_tasks``, times as
    ``rows``' dialect takes them."""
    return {
        "topic": filters.topic,
        "sub_topic": filters.sub_topic,
        "status": None if filters.status is None else str(filters.status),
        "name": filters.name,
        "group_id": filters.group_id,
        "text": filters.text,
        "created_from": rows.moment_param(filters.created_from),
        "created_to": rows.moment_param(filters.created_to),
        "meta": None if filters.meta is None else json.dumps(dict(filters.meta)),
    }
