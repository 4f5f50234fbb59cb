"""The PostgreSQL store's event log, reports and operator's reads: the backend
methods behind :class:`~tenure.store.eventlog.EventLog` and
:class:`~tenure.store.operating.Operating`, each one statement (task_stats: three
in one read-only snapshot; task_groups: one, in a transaction with JIT off)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from tenure.store.backend import EventPosition, EventRead, GroupTally
from tenure.store.postgres import rows
from tenure.store.postgres.rows import Row
from tenure.store.postgres.statements import Connection, Statements
from tenure.store.types import Event, QueueStats, Report, TableKey
from tenure.task import Status


class PostgresLog:
    """Mixed into :class:`~tenure.store.postgres.PostgresStore`, which provides
    the connections and its schema's statements."""

    _sql: Statements

    def _read(self, query: str, params: dict[str, Any]) -> list[Row]:
        raise NotImplementedError

    def _count_of(self, query: str, params: dict[str, Any]) -> int:
        raise NotImplementedError

    def _connection(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def _event_list(self, after: EventPosition, limit: int) -> EventRead:
        return rows.event_read(self._read("list_events", rows.event_params(after, limit)))

    def _event_tail(self, before: EventPosition, limit: int) -> list[Event]:
        params = {"before_xid": str(before[0]), "before_id": before[1], "limit": limit}
        return [rows.event(row) for row in self._read("tail_events", params)]

    def tally_fold(self, *, compact: bool = False) -> None:
        """Fold the task tallies' delta rows (see 0008_task_tallies.sql)."""
        with self._connection() as conn:
            conn.execute(self._sql.q["fold_task_counts"])
            conn.execute(self._sql.q["fold_task_transitions"])
            if compact:
                conn.execute(self._sql.q["compact_task_transitions"])

    def _task_transition_totals(self) -> dict[str, dict[Status, int]]:
        return rows.per_topic(self._read("transition_totals", {}))

    def _task_events(self, task_id: str) -> list[Event]:
        return [rows.event(row) for row in self._read("list_task_events", {"task_id": task_id})]

    def _task_stats(self, now: datetime, since: datetime) -> QueueStats:
        with self._connection() as conn, conn.transaction():  # one snapshot for all three
            conn.execute(self._sql.q["read_only_snapshot"])
            found = [
                self._sql.fetch(conn, "stats_counts", {}),
                self._sql.fetch(conn, "stats_oldest_pending", {"now": now}),
                self._sql.fetch(conn, "stats_endings", {"since": since}),
            ]
        return rows.queue_stats(now, since, *found)

    def _task_rates(
        self, since: datetime, until: datetime, topic: str | None
    ) -> dict[datetime, dict[Status, int]]:
        params = {"since": since, "until": until, "topic": topic}
        entered: dict[datetime, dict[Status, int]] = {}
        for row in self._read("task_rates", params):
            minute = rows.moment(row, "minute")
            entered.setdefault(minute, {})[Status(row["status"])] = row["count"]
        return entered

    def _task_groups(self, limit: int, scan: int) -> list[GroupTally]:
        with self._connection() as conn, conn.transaction():
            conn.execute(self._sql.q["without_jit"])
            found = self._sql.fetch(conn, "task_groups", {"limit": limit, "scan": scan})
        return [
            (row["group_id"], Status(row["status"]), row["count"], rows.moment(row, "created_at"))
            for row in found
        ]

    def _retention_backlog(
        self, older_than: float, cap: int, now: datetime | None
    ) -> tuple[int, int]:
        params = {"older_than": older_than, "cap": cap, "now": now}
        found = self._read("retention_backlog", params)[0]
        return found["tasks"], found["events"]

    def _report_save(self, report: Report) -> Report | None:
        found = self._read("report_save", rows.report_params(report))
        return rows.report(found[0]) if found else None

    def _report_get(self, key: str) -> Report | None:
        found = self._read("report_get", {"key": key})
        return rows.report(found[0]) if found else None

    def _report_list(self) -> list[Report]:
        return [rows.report(row) for row in self._read("report_list", {})]

    def _report_prune(self, older_than: float, now: datetime | None) -> int:
        return self._count_of("prune_reports", {"older_than": older_than, "now": now})

    # -- what tenure doctor reads ------------------------------------------------

    def _leader_silence(self, name: str) -> float | None:
        found = self._read("leader_silence", {"name": name})
        return float(found[0]["silence"]) if found else None

    def _database_settings(self) -> dict[str, str]:
        return {row["name"]: row["setting"] for row in self._read("database_settings", {})}

    def _table_keys(self) -> list[TableKey]:
        return [TableKey(**row) for row in self._read("table_keys", {})]
