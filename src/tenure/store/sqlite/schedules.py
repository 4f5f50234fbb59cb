"""The SQLite store's schedules: the backend methods behind
:class:`~tenure.store.schedules.Schedules`, each a statement in its own
transaction, but the tick, whose task is written in the write transaction of
its compare-and-set. Times are the process's wall clock, as every SQLite time."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

from tenure.clock import epoch_or_now, from_epoch, to_epoch
from tenure.errors import ScheduleExists
from tenure.store.schedules import Schedule, ScheduleSpec, spec_of, spec_params
from tenure.store.sqlite.schema import Q


class SQLiteSchedules:
    """Mixed into :class:`~tenure.store.sqlite.SQLiteStore`, which provides its
    connections."""

    def _use(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _schedule_declare(self, specs: list[ScheduleSpec], now: datetime | None) -> None:
        at = epoch_or_now(now)
        with self._write() as conn:
            conn.executemany(Q["schedule_declare"], [{**spec_params(s), "now": at} for s in specs])

    def _schedule_add(self, spec: ScheduleSpec, now: datetime | None) -> Schedule:
        row = self._written("schedule_add", {**spec_params(spec), "now": epoch_or_now(now)})
        if row is None:
            raise ScheduleExists(spec.name)
        return schedule(row)

    def _schedule_replace(self, spec: ScheduleSpec, now: datetime | None) -> Schedule | None:
        row = self._written("schedule_replace", {**spec_params(spec), "now": epoch_or_now(now)})
        return None if row is None else schedule(row)

    def _schedule_pause(self, name: str, paused: bool, now: datetime | None) -> Schedule | None:
        params = {"name": name, "paused": paused, "now": epoch_or_now(now)}
        row = self._written("schedule_pause", params)
        return None if row is None else schedule(row)

    def _schedule_remove(self, name: str) -> bool:
        return self._written("schedule_remove", {"name": name}) is not None

    def _schedule_get(self, name: str) -> Schedule | None:
        with self._use() as conn:
            row = conn.execute(Q["schedule_get"], {"name": name}).fetchone()
        return None if row is None else schedule(row)

    def _schedule_list(self) -> list[Schedule]:
        with self._use() as conn:
            return [schedule(row) for row in conn.execute(Q["schedule_list"])]

    @contextmanager
    def _schedule_advance(
        self, name: str, tick: datetime, task_id: str | None
    ) -> Iterator[sqlite3.Connection | None]:
        params = {"name": name, "tick": to_epoch(tick), "task_id": task_id}
        with self._write() as conn:
            moved = conn.execute(Q["schedule_advance"], params).fetchall()
            yield conn if moved else None

    def _written(self, query: str, params: dict[str, Any]) -> sqlite3.Row | None:
        """The one row a write returns, if any."""
        with self._write() as conn:
            found: list[sqlite3.Row] = conn.execute(Q[query], params).fetchall()
        return found[0] if found else None


def schedule(row: sqlite3.Row) -> Schedule:
    """A schedule from its row."""
    paused_at = row["paused_at"]
    return Schedule(
        spec=spec_of(row, json.loads(row["args"]), json.loads(row["kwargs"])),
        origin=row["origin"],
        paused_at=None if paused_at is None else from_epoch(paused_at),
        last_tick=from_epoch(row["last_tick"]),
        last_task_id=row["last_task_id"],
        created_at=from_epoch(row["created_at"]),
        updated_at=from_epoch(row["updated_at"]),
    )
