"""One sample of a soaking store: its tables' size and dead rows, retention's
backlog and the age of the oldest finished task and event, pickup latencies,
the drain's rate and the server's processor time (a private server's; with
SQLite, or a shared server, the workers'). Read beside the store, on a
connection of its own, by named statements (``postgres.sql``, ``sqlite.sql``)."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from tenure import Status, Store
from tenure.store.sqlfile import load_queries

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int] | None = None, parent: int | None = None) -> float:
    """Processor seconds used so far by ``pids``, or by ``parent`` and its
    children (a PostgreSQL server: its postmaster, backends and autovacuum)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        pid, ppid = int(entry.name), int(fields[1])
        if (pids is not None and pid in pids) or (parent is not None and parent in (pid, ppid)):
            total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


class Sampler:
    """Samples ``store`` (at ``url``) every ``every`` seconds: call
    :meth:`sample` once per period."""

    def __init__(
        self, store: Store, url: str, retention: float, every: float, server: int | None
    ) -> None:
        self.store, self.url, self.retention, self.every = store, url, retention, every
        self.server = server
        self.postgres = url.startswith("postgres")
        self.queries = load_queries(
            "benchmarks.soak", "postgres.sql" if self.postgres else "sqlite.sql"
        )
        self.worker_pids: list[int] = []
        self._last = (time.monotonic(), self._done(), self._cpu())

    def _done(self) -> int:
        totals = self.store.task_transition_totals()
        return sum(per_status.get(Status.DONE, 0) for per_status in totals.values())

    def _cpu(self) -> float:
        """The server's processor seconds (a private one's), else the workers'."""
        if self.server is not None:
            return cpu_seconds(parent=self.server)
        return cpu_seconds(pids=self.worker_pids)

    def sample(self) -> tuple[dict[str, Any], list[float]]:
        """This period's figures, and its pickup latencies (seconds)."""
        now, done, cpu = time.monotonic(), self._done(), self._cpu()
        since, done_before, cpu_before = self._last
        self._last = (now, done, cpu)
        backlog = self.store.retention_backlog(self.retention)
        figures: dict[str, Any] = {
            "drained_per_second": round((done - done_before) / (now - since), 1),
            "cpu_percent": round(100 * (cpu - cpu_before) / (now - since), 1),
            "backlog_tasks": backlog.tasks,
            "backlog_events": backlog.events,
        }
        read = self._postgres if self.postgres else self._sqlite
        more, pickups = read()
        return {**figures, **more}, pickups

    def _postgres(self) -> tuple[dict[str, Any], list[float]]:
        with psycopg.connect(self.url, autocommit=True, row_factory=dict_row) as conn:
            tables = conn.execute(self.queries["tables"]).fetchall()
            oldest = conn.execute(self.queries["oldest"]).fetchone() or {}
            waits = conn.execute(self.queries["pickups"], {"window": self.every}).fetchall()
        return {
            "bytes": sum(t["bytes"] for t in tables),
            "tables": {t["name"]: t["bytes"] for t in tables},
            "dead_rows": sum(t["dead"] for t in tables),
            "oldest_finished": oldest.get("finished"),
            "oldest_event": oldest.get("event"),
        }, [row["seconds"] for row in waits]

    def _sqlite(self) -> tuple[dict[str, Any], list[float]]:
        path = Path(self.url.removeprefix("sqlite:///"))
        files = {name: Path(f"{path}{name}") for name in ("", "-wal")}
        with sqlite3.connect(path) as conn:
            conn.row_factory = sqlite3.Row
            now = time.time()
            oldest = conn.execute(self.queries["oldest"], {"now": now}).fetchone()
            waits = conn.execute(self.queries["pickups"], {"since": now - self.every}).fetchall()
            free = conn.execute(self.queries["free_pages"]).fetchone()[0]
        conn.close()
        sizes = {f"file{name}": f.stat().st_size for name, f in files.items() if f.exists()}
        return {
            "bytes": sum(sizes.values()),
            "tables": sizes,
            "free_pages": free,
            "oldest_finished": oldest["finished"],
            "oldest_event": oldest["event"],
        }, [row["seconds"] for row in waits]
