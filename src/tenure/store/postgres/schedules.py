"""The PostgreSQL store's schedules: the backend methods behind
:class:`~tenure.store.schedules.Schedules`, each one statement, but the tick,
whose task is written in the transaction of its compare-and-set."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import Any

from tenure.errors import ScheduleExists
from tenure.store.postgres.rows import Row, utc
from tenure.store.postgres.statements import Connection, Statements
from tenure.store.schedules import Schedule, ScheduleSpec, spec_of, spec_params


class PostgresSchedules:
    """Mixed into :class:`~tenure.store.postgres.PostgresStore`, which provides
    the connections and its schema's statements."""

    _sql: Statements

    def _read(self, query: str, params: dict[str, Any]) -> list[Row]:
        raise NotImplementedError

    def _connection(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def _schedule_declare(self, specs: list[ScheduleSpec], now: datetime | None) -> None:
        with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            declared = [{**spec_params(spec), "now": now} for spec in specs]
            cur.executemany(self._sql.q["schedule_declare"], declared)

    def _schedule_add(self, spec: ScheduleSpec, now: datetime | None) -> Schedule:
        found = self._read("schedule_add", {**spec_params(spec), "now": now})
        if not found:
            raise ScheduleExists(spec.name)
        return schedule(found[0])

    def _schedule_replace(self, spec: ScheduleSpec, now: datetime | None) -> Schedule | None:
        found = self._read("schedule_replace", {**spec_params(spec), "now": now})
        return schedule(found[0]) if found else None

    def _schedule_pause(self, name: str, paused: bool, now: datetime | None) -> Schedule | None:
        found = self._read("schedule_pause", {"name": name, "paused": paused, "now": now})
        return schedule(found[0]) if found else None

    def _schedule_remove(self, name: str) -> bool:
        return bool(self._read("schedule_remove", {"name": name}))

    def _schedule_get(self, name: str) -> Schedule | None:
        found = self._read("schedule_get", {"name": name})
        return schedule(found[0]) if found else None

    def _schedule_list(self) -> list[Schedule]:
        return [schedule(row) for row in self._read("schedule_list", {})]

    @contextmanager
    def _schedule_advance(
        self, name: str, tick: datetime, task_id: str | None
    ) -> Iterator[Connection | None]:
        params = {"name": name, "tick": tick, "task_id": task_id}
        with self._connection() as conn, conn.transaction():
            moved = self._sql.fetch(conn, "schedule_advance", params)
            yield conn if moved else None


def schedule(row: Row) -> Schedule:
    """A schedule from its row."""
    return Schedule(
        spec=spec_of(row, row["args"], row["kwargs"]),
        origin=row["origin"],
        paused_at=utc(row["paused_at"]),
        last_tick=row["last_tick"].astimezone(UTC),  # the times are NOT NULL
        last_task_id=row["last_task_id"],
        created_at=row["created_at"].astimezone(UTC),
        updated_at=row["updated_at"].astimezone(UTC),
    )
