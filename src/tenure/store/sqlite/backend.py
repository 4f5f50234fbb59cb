"""The embedded store: one SQLite file shared by the processes of one machine.

WAL mode lets readers run beside the single writer; every write is one
``BEGIN IMMEDIATE`` transaction, so concurrent reservers serialize on the write
lock instead of failing half-way, and the busy timeout waits out contention.
Each thread gets its own connection. Times are the calling process's wall clock:
delays, timings and the holder's own lease expiry (written and read by the same
holder) use it; the supervisor's recovery never compares it with anything.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from tenure.clock import epoch_or_now, from_epoch, utcnow
from tenure.errors import ConfigError, DuplicateTask, InvalidInput, LeaseLost, StoreError
from tenure.store.backend import (
    EventPosition,
    EventRead,
    GroupTally,
    Positioned,
)
from tenure.store.base import DEFAULT_MAX_PAYLOAD_BYTES, Store
from tenure.store.flows import gate_taken, placed
from tenure.store.refusals import LOST_ERROR, NO_TRANSACTION, Answer, admin_refusal, refusal
from tenure.store.sqlite import eventlog, is_memory_path, rows, schema, unique
from tenure.store.sqlite.connections import Connections, begin_write, translated
from tenure.store.sqlite.flowcontrol import SQLiteFlowControl
from tenure.store.sqlite.schedules import SQLiteSchedules
from tenure.store.sqlite.schema import Q
from tenure.store.sqlite.watching import Watching
from tenure.store.sqlreads import Rows, SqlReads
from tenure.store.types import (
    Event,
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
    TableKey,
    UniqueLock,
    WorkerInfo,
)
from tenure.task import CANCELLABLE, RETRYABLE, Lease, Status, Task

SYNCHRONOUS_MODES = ("full", "normal", "extra")
"""Allowed ``synchronous`` settings. FULL by default: an acknowledged write
survives a power cut, not only a process crash."""


_SYNCHRONOUS = {0: "off", 1: "normal", 2: "full", 3: "extra"}
"""``PRAGMA synchronous``'s numbers, by name."""


def scratch_directory(path: str | Path) -> tempfile.TemporaryDirectory[str] | None:
    """For ``:memory:``, the temporary directory that holds the store's private
    database until it is closed; ``None`` for a file."""
    if is_memory_path(str(path)):
        return tempfile.TemporaryDirectory(prefix="tenure-memory-")
    return None


class SQLiteStore(Watching, SQLiteSchedules, SQLiteFlowControl, SqlReads, Store):
    """Tasks in one SQLite database file (WAL mode)."""

    caller_connection = "a sqlite3.Connection"
    # One write lock for every process: a retention batch is short (100 rows
    # hold it a fifth as long as 500 did: the 20-minute soak's p99s then stay
    # level, see the benchmarks page), and rests after itself, so a producer or
    # a worker kept waiting for the lock is not kept longer by the next batch.
    prune_batch = 100
    prune_rest = 2.0
    rows: ClassVar[Rows] = rows

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "full",
        busy_timeout: float = 30.0,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    ) -> None:
        super().__init__(max_payload_bytes=max_payload_bytes)
        if synchronous not in SYNCHRONOUS_MODES:
            raise ConfigError(
                f"synchronous must be one of {SYNCHRONOUS_MODES}, not {synchronous!r}"
            )
        if not 0 <= busy_timeout <= 3600:  # also refuses NaN
            raise ConfigError(f"busy_timeout must be 0 to 3600 seconds, not {busy_timeout!r}")
        self._scratch = scratch_directory(path)
        if self._scratch is not None:
            # Threads share the database, which SQLite's own in-memory one cannot do
            # (each connection would see a database of its own), and nothing in it
            # outlives the store, so nothing needs to wait for the disk.
            path, synchronous = Path(self._scratch.name) / "tenure.db", "off"
        self.path = str(path)
        self._synchronous = synchronous
        self._busy_timeout = busy_timeout
        self._local = threading.local()  # what each thread's watch has seen
        self._connections = Connections(self._open, repr(self))
        with self._use() as conn:
            self.migrations_applied = schema.migrate(conn)
            """The versions this opening applied (empty: the schema was current)."""

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    # -- connections and transactions ------------------------------------------

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False
        )
        conn.row_factory = sqlite3.Row
        conn.execute(Q["use_wal"])
        conn.execute(Q[f"synchronous_{self._synchronous}"])
        return conn

    def _use(self) -> AbstractContextManager[sqlite3.Connection]:
        """This thread's connection (see :mod:`.connections`)."""
        return self._connections.use()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the database's write lock from its
        start; rolled back if it fails, its commit included (which SQLite may
        leave open), so that the thread's next write can begin."""
        with self._use() as conn:
            begin_write(conn, Q["begin_write"], self._busy_timeout)
            try:
                yield conn
                conn.execute(Q["commit"])
            except BaseException:
                conn.rollback()
                raise

    @contextmanager
    def _within(self, connection: Any) -> Iterator[sqlite3.Connection]:
        """The caller's connection and transaction if it gave one, else our own.

        In the caller's transaction the batch runs under a savepoint, so a refused
        batch leaves none of its rows behind even if the caller then commits.
        """
        if connection is None:
            with self._write() as conn:
                yield conn
            return
        if not isinstance(connection, sqlite3.Connection):
            raise ConfigError(f"connection must be a sqlite3.Connection, not {type(connection)}")
        with translated():
            connection.execute(Q["savepoint"])
            try:
                yield connection
            except BaseException:
                connection.execute(Q["rollback_to_savepoint"])
                connection.execute(Q["release_savepoint"])
                raise
            connection.execute(Q["release_savepoint"])

    def _read(self, query: str, params: dict[str, Any]) -> list[sqlite3.Row]:
        with self._use() as conn:
            return conn.execute(Q[query], params).fetchall()

    def close(self) -> None:
        """Close every thread's connection, each once no operation is using it.

        Threads still holding the store afterwards get ``StoreError``, never a
        connection closed under their feet.
        """
        self._connections.close()
        if self._scratch is not None:
            self._scratch.cleanup()

    # -- creating -------------------------------------------------------------

    def _task_create_many(
        self, tasks: list[PreparedTask], now: datetime | None, connection: Any
    ) -> list[Task]:
        at = epoch_or_now(now)
        return self._insert(
            tasks, [rows.insert_row(task, at) for task in tasks], [], at, connection
        )

    def _flow_create(
        self,
        tasks: list[PreparedTask],
        placements: list[Placement],
        gates: list[NewGate],
        now: datetime | None,
        connection: Any,
    ) -> list[Task]:
        at = epoch_or_now(now)
        inserted = [rows.flow_row(t, at, p) for t, p in zip(tasks, placements, strict=True)]
        gated = [rows.gate_row(gate, at) for gate in gates]
        return placed(self._insert(tasks, inserted, gated, at, connection), placements)

    def _insert(
        self,
        tasks: list[PreparedTask],
        inserted: list[tuple[Any, ...]],
        gates: list[dict[str, Any]],
        at: float,
        connection: Any,
    ) -> list[Task]:
        """Write ``gates`` and the tasks' rows ``inserted``, taking the unique
        locks taken at enqueue, all or nothing; the tasks as created ``at``."""
        try:
            with self._within(connection) as conn:
                if gates:
                    conn.executemany(Q["insert_gates"], gates)
                conn.executemany(Q["insert_task"], inserted)
                unique.lock_at_enqueue(conn, tasks, at)
        except StoreError as exc:
            if "tenure_gates.id" in str(exc.__cause__):
                raise gate_taken() from None
            if isinstance(exc.__cause__, sqlite3.IntegrityError):
                raise self._duplicate([t.id for t in tasks], connection) from None
            raise
        created_at = from_epoch(at)
        return [
            task.created(created_at, rows.moment(row[rows.RUN_AT]))
            for task, row in zip(tasks, inserted, strict=True)
        ]

    def _gate_get(self, gate_id: str) -> Gate | None:
        found = self._read("get_gate", {"id": gate_id})
        return rows.gate(found[0]) if found else None

    def _duplicate(self, ids: list[str], connection: Any) -> DuplicateTask:
        """The error naming an id of ``ids`` that exists (as the caller's
        connection sees it, when it gave one)."""
        params = {"ids": json.dumps(ids)}
        if connection is None:
            existing = self._read("existing_ids", params)
        else:
            existing = connection.execute(Q["existing_ids"], params).fetchall()
        seen: set[str] = set()
        for task_id in ids:  # a duplicate inside the batch itself
            if task_id in seen:
                return DuplicateTask(task_id)
            seen.add(task_id)
        return DuplicateTask(existing[0][0] if existing else ids[0])

    # -- reading --------------------------------------------------------------

    def _task_list_leased(
        self, topics: Sequence[str] | None, after: int, limit: int
    ) -> list[Positioned]:
        if topics is None:
            found = self._read("list_leased", {"after": after, "limit": limit})
        else:
            params = {"after": after, "limit": limit, "topics": json.dumps(list(topics))}
            found = self._read("list_leased_topics", params)
        return [(row["seq"], rows.task(row)) for row in found]

    def _event_list(self, after: EventPosition, limit: int) -> EventRead:
        with self._use() as conn:
            return eventlog.read_events(conn, after[1], limit)

    # -- leases ---------------------------------------------------------------

    def _task_reserve(self, params: ReserveParams) -> list[Task]:
        values: dict[str, Any] = {
            "owner": params.owner,
            "limit": params.limit,
            "lease_seconds": params.lease_seconds,
            "tags": json.dumps(sorted(params.tags)),
            "now": epoch_or_now(params.now),
        }
        query, values["scope"] = "reserve_any", None
        if params.topics is not None and len(params.topics) == 1:
            query, values["topic"] = "reserve_topic", params.topics[0]
            values["scope"] = json.dumps([params.topics[0]])
        elif params.topics is not None:
            query, values["topics"] = "reserve_topics", json.dumps(list(params.topics))
            values["scope"] = values["topics"]
        with self._write() as conn:  # rows become tasks before the commit
            found = rows.in_order_taken(conn.execute(Q[query], values).fetchall())
            at = values["now"]
            return [rows.task(row) for row in found if unique.lock_at_start(conn, row, at)]

    def _holder_writes(
        self,
        query: str,
        target: Status,
        items: Sequence[tuple[Lease, dict[str, Any]]],
        now: datetime | None,
        brief: bool = False,
    ) -> list[Answer]:
        """Run ``query`` once per lease in one transaction; explain each miss.
        ``brief`` answers with task states (``query``'s ``_brief`` form)."""
        at = epoch_or_now(now)
        sql = Q[f"{query}_brief" if brief else query]
        read = rows.task_state if brief else rows.task
        outcomes: list[Answer] = []
        with self._write() as conn:
            for lease, extra in items:
                params = {**extra, "now": at}
                outcomes.append(_held_write(conn, sql, read, lease, params, target=target))
        return outcomes

    def _task_complete_in(
        self, lease: Lease, result: str, now: datetime | None, connection: Any
    ) -> Answer:
        if isinstance(connection, sqlite3.Connection) and not connection.in_transaction:
            raise InvalidInput("connection", NO_TRANSACTION)
        params = {"result": result, "now": epoch_or_now(now)}
        sql = Q["complete_tasks"]
        with self._within(connection) as conn:
            by_name = conn.cursor()  # a caller's connection has no row factory
            by_name.row_factory = sqlite3.Row
            return _held_write(by_name, sql, rows.task, lease, params, target=Status.DONE)

    def _leases_lost(self, leases: list[Lease]) -> list[str]:
        held = json.dumps([[lease.task_id, lease.token, lease.owner] for lease in leases])
        return [row["id"] for row in self._read("leases_lost", {"held": held})]

    def _lease_extend_many(
        self, leases: list[Lease], lease_seconds: float, now: datetime | None, brief: bool
    ) -> list[Answer]:
        items = [(lease, {"lease_seconds": lease_seconds}) for lease in leases]
        return self._holder_writes("extend_leases", Status.RUNNING, items, now, brief)

    def _task_complete_many(
        self, completions: list[tuple[Lease, str]], now: datetime | None, brief: bool
    ) -> list[Answer]:
        items = [(lease, {"result": result}) for lease, result in completions]
        return self._holder_writes("complete_tasks", Status.DONE, items, now, brief)

    def _task_fail_many(
        self, failures: list[Failure], now: datetime | None, brief: bool
    ) -> list[Answer]:
        items = [(f.lease, rows.failure_params(f)) for f in failures]
        return self._holder_writes("fail_tasks", Status.FAILED, items, now, brief)

    def _task_snooze(self, lease: Lease, seconds: float, now: datetime | None) -> Answer:
        items = [(lease, {"seconds": seconds})]
        return self._holder_writes("snooze_task", Status.SNOOZED, items, now)[0]

    def _task_progress(
        self, lease: Lease, progress: float, note: str | None, now: datetime | None
    ) -> Answer:
        items = [(lease, {"progress": progress, "note": note})]
        return self._holder_writes("progress_task", Status.RUNNING, items, now, brief=True)[0]

    def _task_cancel_held(self, lease: Lease, error: str, now: datetime | None) -> Answer:
        items = [(lease, {"error": error})]
        return self._holder_writes("cancel_held_task", Status.CANCELLED, items, now)[0]

    def _task_release(self, lease: Lease, now: datetime | None) -> Answer:
        return self._holder_writes("release_task", Status.PENDING, [(lease, {})], now)[0]

    # -- supervision and administration ---------------------------------------

    def _task_revoke(self, task_id: str, record_ver: int, now: datetime | None) -> Task | None:
        params = {
            "id": task_id,
            "record_ver": record_ver,
            "now": epoch_or_now(now),
            "error": json.dumps(LOST_ERROR.stored()),
        }
        with self._write() as conn:
            row = conn.execute(Q["revoke_task"], params).fetchone()
            return None if row is None else rows.task(row)

    def _admin_transition(self, task_id: str, target: Status, now: datetime | None) -> Task:
        query, sources = ("cancel_task", CANCELLABLE)
        if target is Status.PENDING:
            query, sources = ("retry_task", RETRYABLE)
        params = {"id": task_id, "now": epoch_or_now(now), "sources": rows.status_list(sources)}
        with self._write() as conn:
            row = conn.execute(Q[query], params).fetchone()
            if row is not None:
                return rows.task(row)
            current = conn.execute(Q["get_task"], {"id": task_id}).fetchone()
        raise admin_refusal(None if current is None else rows.task(current), task_id, target)

    # -- the clock and retention ------------------------------------------------

    def _clock_now(self) -> datetime:
        return utcnow()

    # -- what tenure doctor reads ----------------------------------------------------

    def _leader_silence(self, name: str) -> float | None:
        found = self._read("leader_silence", {"name": name, "now": time.time()})
        return float(found[0]["silence"]) if found else None

    def _database_settings(self) -> dict[str, str]:
        journal = self._read("journal_mode", {})[0][0]
        synchronous = self._read("synchronous", {})[0][0]
        return {"journal_mode": str(journal).lower(), "synchronous": _SYNCHRONOUS[synchronous]}

    def _table_keys(self) -> list[TableKey]:
        return []  # SQLite's copies (of the file, or of its pages) need no key per row

    def _task_prune(
        self, older_than: float, limit: int, now: datetime | None, statuses: list[str]
    ) -> int:
        params = {"cutoff": epoch_or_now(now) - older_than, "limit": limit}
        with self._write() as conn:
            deleted: int = conn.execute(
                Q["prune_tasks"], {**params, "statuses": json.dumps(statuses)}
            ).rowcount
            conn.execute(Q["prune_gates"], params)
            return deleted

    def _event_tail(self, before: EventPosition, limit: int) -> list[Event]:
        found = self._read("tail_events", {"before": before[1], "limit": limit})
        return [rows.event(row) for row in found]

    def _event_prune(self, older_than: float, limit: int, now: datetime | None) -> int:
        with self._write() as conn:
            return eventlog.prune_events(conn, epoch_or_now(now) - older_than, limit)

    def _task_events(self, task_id: str) -> list[Event]:
        with self._use() as conn:
            return eventlog.task_events(conn, task_id)

    def _task_transition_totals(self) -> dict[str, dict[Status, int]]:
        with self._use() as conn:
            return eventlog.transition_totals(conn)

    def _task_stats(self, now: datetime, since: datetime) -> QueueStats:
        with self._use() as conn:
            return eventlog.task_stats(conn, now, since)

    def _task_rates(
        self, since: datetime, until: datetime, topic: str | None
    ) -> dict[datetime, dict[Status, int]]:
        with self._use() as conn:
            return eventlog.task_rates(conn, since, until, topic)

    def _task_groups(self, limit: int, scan: int) -> list[GroupTally]:
        with self._use() as conn:
            return eventlog.task_groups(conn, limit, scan)

    def _retention_backlog(
        self, older_than: float, cap: int, now: datetime | None
    ) -> tuple[int, int]:
        params = {"cutoff": epoch_or_now(now) - older_than, "cap": cap}
        found = self._read("retention_backlog", params)[0]
        return found["tasks"], found["events"]

    def _report_save(self, report: Report) -> Report | None:
        with self._write() as conn:
            return eventlog.save_report(conn, report, time.time())

    def _report_get(self, key: str) -> Report | None:
        with self._use() as conn:
            return eventlog.get_report(conn, key)

    def _report_list(self) -> list[Report]:
        with self._use() as conn:
            return eventlog.list_reports(conn)

    def _report_prune(self, older_than: float, now: datetime | None) -> int:
        with self._write() as conn:
            return eventlog.prune_reports(conn, epoch_or_now(now) - older_than)

    # -- unique locks -------------------------------------------------------------

    def _unique_lock_list(self, limit: int, now: datetime | None) -> list[UniqueLock]:
        params = {"limit": limit, "now": epoch_or_now(now)}
        return [rows.unique_lock(row) for row in self._read("list_unique_locks", params)]

    def _unique_lock_prune(self, now: datetime | None) -> int:
        with self._write() as conn:
            return conn.execute(Q["prune_unique_locks"], {"now": epoch_or_now(now)}).rowcount

    # -- the worker registry ----------------------------------------------------

    def _worker_beat(self, info: WorkerInfo, now: datetime | None) -> WorkerInfo:
        params = {
            "id": info.id,
            "host": info.host,
            "pid": info.pid,
            "topics": json.dumps(sorted(info.topics)),
            "tags": json.dumps(sorted(info.tags)),
            "pool": info.pool,
            "concurrency": info.concurrency,
            "held": info.held,
            "now": epoch_or_now(now),
        }
        with self._write() as conn:
            return rows.worker(conn.execute(Q["worker_beat"], params).fetchone())

    def _worker_remove(self, worker_id: str) -> bool:
        with self._write() as conn:
            return conn.execute(Q["worker_remove"], {"id": worker_id}).fetchone() is not None

    def _worker_prune(self, silent_for: float, now: datetime | None) -> int:
        with self._write() as conn:
            cutoff = epoch_or_now(now) - silent_for
            pruned: int = conn.execute(Q["worker_prune"], {"cutoff": cutoff}).rowcount
            return pruned

    # -- leadership ---------------------------------------------------------------

    def _leader_acquire(self, name: str, owner: str, lease_seconds: float) -> LeaderLease | None:
        params = {"name": name, "owner": owner, "lease_seconds": lease_seconds, "now": time.time()}
        with self._write() as conn:
            row = conn.execute(Q["leader_acquire"], params).fetchone()
        return None if row is None else LeaderLease(row["name"], row["owner"], row["token"])

    def _leader_extend(self, lease: LeaderLease, lease_seconds: float) -> LeaderState:
        params = {**rows.leader_params(lease), "lease_seconds": lease_seconds, "now": time.time()}
        with self._write() as conn:
            row = conn.execute(Q["leader_extend"], params).fetchone()
            if row is None:
                raise LeaseLost(lease.name, f"leadership {lease.token} was revoked or given up")
            return rows.leader(row)

    def _leader_revoke(self, name: str, record_ver: int) -> bool:
        params = {"name": name, "record_ver": record_ver, "now": time.time()}
        with self._write() as conn:
            return conn.execute(Q["leader_revoke"], params).fetchone() is not None

    def _leader_resign(self, lease: LeaderLease) -> bool:
        params = {**rows.leader_params(lease), "now": time.time()}
        with self._write() as conn:
            return conn.execute(Q["leader_resign"], params).fetchone() is not None


def _held_write(
    conn: sqlite3.Connection | sqlite3.Cursor,
    sql: str,
    read: Callable[[sqlite3.Row], Answer],
    lease: Lease,
    params: dict[str, Any],
    *,
    target: Status,
) -> Answer:
    """One holder write under ``lease``; a miss explained from the task as it is.
    ``conn`` reads rows by name."""
    held = {"id": lease.task_id, "token": lease.token, "owner": lease.owner}
    row = conn.execute(sql, {**held, **params}).fetchone()
    if row is not None:
        return read(row)
    current = conn.execute(Q["get_task"], {"id": lease.task_id}).fetchone()
    return refusal(None if current is None else rows.task(current), lease, target)
