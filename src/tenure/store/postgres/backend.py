"""The shared store: one PostgreSQL database serving workers on many machines.

Every operation is one statement on an autocommit connection from a
``psycopg_pool`` pool, so it is its own transaction and one round trip; a
statement is atomic, so an operation that raised changed nothing (or, if the
connection broke while the commit was under way, may have committed: it is
reported as :class:`~tenure.errors.StoreUnavailable`, never as a success).
Batches travel as arrays in one statement; the rare batch that names the same
task twice, or is too large for one statement, runs as several statements in
one explicit transaction (see ``statements``). A large batch of new tasks is
streamed with ``COPY`` in one transaction (see ``copying``).

Times come from the database's clock unless the caller passes ``now``, so the
clocks of the machines sharing the store never need to agree. Reservers skip
each other's locked rows (``FOR UPDATE SKIP LOCKED``), and every connection is
checked as it leaves the pool, so a session the server dropped is replaced
instead of failing the next operation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from typing import Any, ClassVar

import psycopg
from psycopg import conninfo, pq
from psycopg_pool import ConnectionPool

from tenure.errors import ConfigError, InvalidInput, LeaseLost, StoreError
from tenure.store import validate
from tenure.store.backend import Positioned
from tenure.store.base import Store
from tenure.store.flows import gate_taken, placed
from tenure.store.postgres import copying, pooler, rows, schema, statements
from tenure.store.postgres.arrays import TextArray
from tenure.store.postgres.driver import (
    configure,
    configure_direct,
    connection_kwargs,
    first_connection,
    is_gate_taken,
    looks_dropped,
    lost_race,
    translated,
)
from tenure.store.postgres.eventlog import PostgresLog
from tenure.store.postgres.flowcontrol import PostgresFlowControl
from tenure.store.postgres.notify import Listener, Listening, Polling
from tenure.store.postgres.params import store_params
from tenure.store.postgres.pooling import Pool
from tenure.store.postgres.rows import Row
from tenure.store.postgres.schedules import PostgresSchedules
from tenure.store.postgres.statements import Connection
from tenure.store.refusals import LOST_ERROR, NO_TRANSACTION, Answer, admin_refusal, refusal
from tenure.store.sqlreads import Rows, SqlReads
from tenure.store.types import (
    Failure,
    Gate,
    LeaderLease,
    LeaderState,
    NewGate,
    Placement,
    PreparedTask,
    ReserveParams,
    UniqueLock,
    WorkerInfo,
)
from tenure.task import CANCELLABLE, RETRYABLE, Lease, Status, Task

ACQUIRE_ATTEMPTS = 3
"""Runs of ``leader_acquire`` before a lost race is reported as an error."""


class PostgresStore(
    Listening, PostgresLog, PostgresSchedules, PostgresFlowControl, SqlReads, Store
):
    """Tasks in a PostgreSQL database (``postgresql://user@host:port/dbname``).

    ``role`` names the process's part (``worker``, ``scheduler`` …) in the
    server's ``application_name``, as ``tenure-<role>``. ``migrate=False``
    skips applying migrations on open (``tenure migrate`` applies them);
    ``migrations_applied`` lists the versions this opening applied.

    ``pooled`` says whether the store reaches the server through a pooler
    (PgBouncer): its connections then prepare no statements, and it listens
    only on the URL's ``listen=`` connection, or polls (see :mod:`.pooler`).

    Opening connects once before anything else and raises at once if the
    server refuses (``ConfigError``: no such database, wrong password) or
    cannot be reached (``StoreUnavailable``, after ``connect_timeout`` seconds
    at most for a server that does not answer: see
    :func:`~tenure.store.postgres.driver.first_connection`).
    """

    rows: ClassVar[Rows] = rows

    def __init__(
        self,
        url: str,
        *,
        max_payload_bytes: int | None = None,
        pool_min: int = 1,
        pool_max: int = 10,
        pool_timeout: float = 30.0,
        role: str = "store",
        migrate: bool = True,
        connect_timeout: float | None = None,
    ) -> None:
        super().__init__(
            **({} if max_payload_bytes is None else {"max_payload_bytes": max_payload_bytes})
        )
        _check_pool_sizes(pool_min, pool_max)
        timeout = validate.seconds(pool_timeout, "pool_timeout")
        if connect_timeout is not None:
            connect_timeout = validate.seconds(connect_timeout, "connect_timeout")
        self.url = url
        url, listen, self.schema = store_params(url)
        self._sql = statements.Statements(schema.queries(self.schema))
        self._conninfo = url
        self.migrations_applied: list[int] = []
        with first_connection(url, role, connect_timeout) as conn:
            with translated():
                self.pooled = pooler.is_pooled(conn)
            if migrate:
                self.migrations_applied = schema.migrate_connection(conn, self.schema)
        self._pool: ConnectionPool[Connection] = Pool(
            url,
            kwargs=connection_kwargs(url, role, pooled=self.pooled),
            configure=configure if self.pooled else configure_direct,
            min_size=pool_min,
            max_size=pool_max,
            timeout=timeout,
            name=f"tenure-{role}",
            open=False,
        )
        self._listeners(listen if listen is not None else url, role, direct=listen is not None)
        try:
            with translated():
                self._pool.open()
        except BaseException:
            self.close()
            raise

    def _listeners(self, url: str, role: str, *, direct: bool) -> None:
        """The listeners of new tasks and new events, on connections to ``url``:
        the ``listen=`` URL when given, else the store's own. Behind a pooler
        with none, LISTEN cannot be heard: the store then polls (:mod:`.pooler`)."""
        if self.pooled and not direct:
            self._listener = self._event_listener = Polling(pooler.polling_warning(self._conninfo))
            return
        connect = partial(psycopg.connect, url, **connection_kwargs(url, f"{role}-listener"))
        self._listener = Listener(connect, self._sql.q, self._connection, events=False)
        self._event_listener = Listener(connect, self._sql.q, self._connection, events=True)

    def __repr__(self) -> str:
        parts = conninfo.conninfo_to_dict(self._conninfo)
        where = f"{parts.get('host', '')}:{parts.get('port', '')}/{parts.get('dbname', '')}"
        return f"PostgresStore({where!r})"

    # -- connections ------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """A pooled autocommit connection; psycopg's errors become tenure's.

        Every statement commits by itself and every explicit transaction is a
        ``conn.transaction()`` block, which ends itself; the pool would still
        roll back one left open, on the connection's return."""
        with translated():
            conn = self._checkout()
            try:
                yield conn
            finally:
                self._pool.putconn(conn)

    @contextmanager
    def _without_jit(self, conn: Connection) -> Iterator[None]:
        """Behind a pooler, a transaction with JIT compiling off (a direct
        connection has it off for its session: see ``session.sql``)."""
        if not self.pooled:
            yield
            return
        with conn.transaction():
            conn.execute(self._sql.q["without_jit"])
            yield

    def _checkout(self) -> Connection:
        """A pooled connection that is, as far as can be known, alive.

        A session the server dropped (restart, failover, pg_terminate_backend)
        would fail the next operation, and retrying an operation after such a
        failure could apply a write twice; so a connection is checked before
        use instead. Dead ones go back to the pool, which discards and replaces
        them. (psycopg_pool's own ``check=`` sleeps a growing back-off after
        each dead connection, which would stall the first operation after a
        restart for seconds.)
        """
        for _ in range(self._pool.max_size):
            conn = self._pool.getconn()
            if not looks_dropped(conn):
                return conn
            try:
                ConnectionPool.check_connection(conn)
            except psycopg.Error:
                self._pool.putconn(conn)
                continue
            return conn
        return self._pool.getconn()  # every idle one was dead: a new one

    def _read(self, query: str, params: dict[str, Any]) -> list[Row]:
        """Run one statement (its own transaction) and return its rows."""
        with self._connection() as conn:
            return self._sql.fetch(conn, query, params)

    def close(self) -> None:
        self._listener.close()
        self._event_listener.close()
        self._pool.close()

    # -- creating -----------------------------------------------------------------

    def _task_create_many(
        self, tasks: list[PreparedTask], now: datetime | None, connection: Any
    ) -> list[Task]:
        if copying.copyable(tasks):
            if connection is None:
                with self._connection() as conn:
                    return copying.copy_insert(self._sql, conn, tasks, now)
            with translated():
                return copying.copy_insert(self._sql, statements.callers(connection), tasks, now)
        return _created(tasks, self._insert(statements.insert_of(tasks, now), connection))

    def _flow_create(
        self,
        tasks: list[PreparedTask],
        placements: list[Placement],
        gates: list[NewGate],
        now: datetime | None,
        connection: Any,
    ) -> list[Task]:
        batch = statements.flow_insert_of(tasks, placements, gates, now)
        return placed(_created(tasks, self._insert(batch, connection)), placements)

    def _insert(self, batch: statements.Insert, connection: Any) -> list[Row]:
        """Write ``batch`` on the store's connection or the caller's; a gate
        that exists is refused as every store refuses it."""
        try:
            if connection is None:
                with self._connection() as conn:
                    return self._sql.insert(conn, batch)
            with translated():
                return self._sql.insert(statements.callers(connection), batch)
        except StoreError as exc:
            if is_gate_taken(exc.__cause__):
                raise gate_taken() from None
            raise

    def _gate_get(self, gate_id: str) -> Gate | None:
        found = self._read("get_gate", {"id": gate_id})
        return rows.gate(found[0]) if found else None

    async def _atask_create_many(
        self, tasks: list[PreparedTask], now: datetime | None, connection: Any
    ) -> list[Task]:
        """The same statements as :meth:`_task_create_many` on a caller's
        ``psycopg.AsyncConnection``, awaited on the caller's event loop."""
        conn = statements.async_callers(connection)
        with translated():
            inserted = await self._sql.ainsert(conn, statements.insert_of(tasks, now))
        return _created(tasks, inserted)

    # -- reading ------------------------------------------------------------------

    def _task_list_leased(
        self, topics: Sequence[str] | None, after: int, limit: int
    ) -> list[Positioned]:
        params: dict[str, Any] = {"after": after, "limit": limit}
        query = "list_leased"
        if topics is not None:
            query, params["topics"] = "list_leased_topics", list(topics)
        return [(row["seq"], rows.task(row)) for row in self._read(query, params)]

    # -- leases -------------------------------------------------------------------

    def _task_reserve(self, params: ReserveParams) -> list[Task]:
        values: dict[str, Any] = {
            "owner": params.owner,
            "limit": params.limit,
            "lease_seconds": params.lease_seconds,
            "tags": sorted(params.tags),
            "now": params.now,
        }
        query, values["scope"] = "reserve_any", None
        if params.topics is not None and len(params.topics) == 1:
            query, values["topic"] = "reserve_topic", params.topics[0]
            values["scope"] = [params.topics[0]]
        elif params.topics is not None:
            query, values["topics"] = "reserve_topics", sorted(set(params.topics))
            values["scope"] = values["topics"]
        with self._connection() as conn, self._without_jit(conn):
            found = self._sql.fetch_made(conn, query, values, rows.place_and_task)
        found.sort(key=lambda taken: taken[0])
        # A task whose unique lock was held at start was settled by its rule in
        # the same statement (the tasks_unique trigger): it is not handed out.
        return [task for _, task in found if task.status is Status.RUNNING]

    def _holder_writes(
        self,
        query: str,
        target: Status,
        leases: Sequence[Lease],
        now: datetime | None,
        *,
        brief: bool = False,
        columns: dict[str, list[Any]] | None = None,
        scalars: dict[str, Any] | None = None,
        sizes: Sequence[int] | None = None,
    ) -> list[Answer]:
        """Run ``query`` for every lease and explain each miss with ``refusal``.

        ``brief`` answers with task states (``query``'s ``_brief`` form).
        ``columns`` are per-lease arrays beside the lease's own, ``scalars`` are
        shared by all, ``sizes`` are the payload bytes of each item. One
        statement, unless :func:`statements.split` must cut the batch.
        """
        statement = f"{query}_brief" if brief else query
        read = rows.task_state if brief else rows.task
        outcomes: list[Answer | None] = [None] * len(leases)
        cuts = statements.split([lease.task_id for lease in leases], sizes or [0] * len(leases))
        with self._connection() as conn, statements.atomic(conn, len(cuts) > 1):
            for cut in cuts:
                params = rows.lease_params([leases[i] for i in cut], now)
                for name, values in (columns or {}).items():
                    params[name] = type(values)([values[i] for i in cut])
                for row in self._sql.fetch(conn, statement, {**params, **(scalars or {})}):
                    outcomes[cut[row["ord"] - 1]] = read(row)
                _explain_misses(self._sql, conn, leases, cut, outcomes, target=target)
        return [outcome for outcome in outcomes if outcome is not None]

    def _leases_lost(self, leases: list[Lease]) -> list[str]:
        return [row["id"] for row in self._read("leases_lost", rows.lease_params(leases, None))]

    def _lease_extend_many(
        self, leases: list[Lease], lease_seconds: float, now: datetime | None, brief: bool
    ) -> list[Answer]:
        scalars = {"lease_seconds": lease_seconds}
        return self._holder_writes(
            "extend_leases", Status.RUNNING, leases, now, brief=brief, scalars=scalars
        )

    def _task_complete_many(
        self, completions: list[tuple[Lease, str]], now: datetime | None, brief: bool
    ) -> list[Answer]:
        leases = [lease for lease, _ in completions]
        results = [result for _, result in completions]
        return self._holder_writes(
            "complete_tasks",
            Status.DONE,
            leases,
            now,
            brief=brief,
            columns={"results": TextArray(results)},
            sizes=[len(result) for result in results],
        )

    def _task_complete_in(
        self, lease: Lease, result: str, now: datetime | None, connection: Any
    ) -> Answer:
        """The completion statement on the caller's connection, in its open
        transaction; a miss is explained from what that transaction sees."""
        conn = statements.callers(connection)
        if conn.info.transaction_status != pq.TransactionStatus.INTRANS:
            raise InvalidInput("connection", NO_TRANSACTION)
        params = {**rows.lease_params([lease], now), "results": TextArray([result])}
        outcomes: list[Answer | None] = [None]
        with translated():
            for row in self._sql.fetch(conn, "complete_tasks", params):
                outcomes[0] = rows.task(row)
            _explain_misses(self._sql, conn, [lease], [0], outcomes, target=Status.DONE)
        return outcomes[0] or refusal(None, lease, Status.DONE)

    def _task_fail_many(
        self, failures: list[Failure], now: datetime | None, brief: bool
    ) -> list[Answer]:
        leases = [failure.lease for failure in failures]
        columns = rows.failure_columns(failures)
        sizes = [len(error) for error in columns["errors"]]
        return self._holder_writes(
            "fail_tasks", Status.FAILED, leases, now, brief=brief, columns=columns, sizes=sizes
        )

    def _task_snooze(self, lease: Lease, seconds: float, now: datetime | None) -> Answer:
        scalars = {"seconds": seconds}
        return self._holder_writes("snooze_task", Status.SNOOZED, [lease], now, scalars=scalars)[0]

    def _task_progress(
        self, lease: Lease, progress: float, note: str | None, now: datetime | None
    ) -> Answer:
        scalars = {"progress": progress, "note": note}
        return self._holder_writes(
            "progress_task", Status.RUNNING, [lease], now, brief=True, scalars=scalars
        )[0]

    def _task_cancel_held(self, lease: Lease, error: str, now: datetime | None) -> Answer:
        scalars = {"error": error}
        return self._holder_writes(
            "cancel_held_task", Status.CANCELLED, [lease], now, scalars=scalars
        )[0]

    def _task_release(self, lease: Lease, now: datetime | None) -> Answer:
        return self._holder_writes("release_task", Status.PENDING, [lease], now)[0]

    # -- supervision and administration ---------------------------------------------

    def _task_revoke(self, task_id: str, record_ver: int, now: datetime | None) -> Task | None:
        params = {
            "id": task_id,
            "record_ver": record_ver,
            "now": now,
            "lost_error": json.dumps(LOST_ERROR.stored()),
        }
        found = self._read("revoke_task", params)
        return rows.task(found[0]) if found else None

    def _admin_transition(self, task_id: str, target: Status, now: datetime | None) -> Task:
        query, sources = ("cancel_task", CANCELLABLE)
        if target is Status.PENDING:
            query, sources = ("retry_task", RETRYABLE)
        params = {"id": task_id, "now": now, "sources": sorted(str(s) for s in sources)}
        with self._connection() as conn:
            found = self._sql.fetch(conn, query, params)
            if found:
                return rows.task(found[0])
            current = self._sql.fetch(conn, "get_task", {"id": task_id})
        raise admin_refusal(rows.task(current[0]) if current else None, task_id, target)

    # -- the clock and retention ------------------------------------------------------

    def _clock_now(self) -> datetime:
        return rows.moment(self._read("clock_now", {})[0], "now")

    def _task_prune(
        self, older_than: float, limit: int, now: datetime | None, statuses: list[str]
    ) -> int:
        params = {"older_than": older_than, "limit": limit, "now": now, "statuses": statuses}
        return self._count_of("prune_tasks", params)

    def _event_prune(self, older_than: float, limit: int, now: datetime | None) -> int:
        params = {"older_than": older_than, "limit": limit, "now": now}
        return self._count_of("prune_events", params)

    def _count_of(self, query: str, params: dict[str, Any]) -> int:
        """Run a statement whose one row counts what it deleted."""
        count: int = self._read(query, params)[0]["count"]
        return count

    def statistics_refresh(self) -> list[str]:
        """ANALYZE the tables whose statistics are stale, if autovacuum is off."""
        with self._connection() as conn:
            stale = [row["name"] for row in self._sql.fetch(conn, "stale_statistics", {})]
            for table in stale:
                conn.execute(self._sql.q[f"analyze_{table}"])
        return stale

    @property
    def connections_at_most(self) -> int | None:
        """The pool's most, and a listener each for tasks and for events;
        ``None`` behind a pooler, whose own pool is what the server sees."""
        return None if self.pooled else self._pool.max_size + 2

    # -- unique locks -------------------------------------------------------------------

    def _unique_lock_list(self, limit: int, now: datetime | None) -> list[UniqueLock]:
        found = self._read("list_unique_locks", {"limit": limit, "now": now})
        return [rows.unique_lock(row) for row in found]

    def _unique_lock_prune(self, now: datetime | None) -> int:
        return self._count_of("prune_unique_locks", {"now": now})

    # -- the worker registry ----------------------------------------------------------

    def _worker_beat(self, info: WorkerInfo, now: datetime | None) -> WorkerInfo:
        return rows.worker(self._read("worker_beat", rows.worker_params(info, now))[0])

    def _worker_remove(self, worker_id: str) -> bool:
        return bool(self._read("worker_remove", {"id": worker_id}))

    def _worker_prune(self, silent_for: float, now: datetime | None) -> int:
        return self._count_of("worker_prune", {"silent_for": silent_for, "now": now})

    # -- leadership -------------------------------------------------------------------

    def _leader_acquire(self, name: str, owner: str, lease_seconds: float) -> LeaderLease | None:
        """One upsert decides. Should the server still refuse it as a lost race (a
        unique violation, or a serialization failure when the database's default
        isolation is stricter than read committed), the refused statement changed
        nothing and is run again: it then finds the winner's row, and answers
        ``None``."""
        params = {"name": name, "owner": owner, "lease_seconds": lease_seconds}
        attempts = 0
        with self._connection() as conn:
            while True:
                attempts += 1
                try:
                    found = self._sql.fetch(conn, "leader_acquire", params)
                except psycopg.Error as exc:
                    if attempts < ACQUIRE_ATTEMPTS and lost_race(exc):
                        continue
                    raise
                return rows.leader_lease(found[0]) if found else None

    def _leader_extend(self, lease: LeaderLease, lease_seconds: float) -> LeaderState:
        params = {**rows.leader_params(lease), "lease_seconds": lease_seconds}
        found = self._read("leader_extend", params)
        if not found:
            raise LeaseLost(lease.name, f"leadership {lease.token} was revoked or given up")
        return rows.leader(found[0])

    def _leader_revoke(self, name: str, record_ver: int) -> bool:
        return bool(self._read("leader_revoke", {"name": name, "record_ver": record_ver}))

    def _leader_resign(self, lease: LeaderLease) -> bool:
        return bool(self._read("leader_resign", rows.leader_params(lease)))


# -- helpers ----------------------------------------------------------------------------


def _created(tasks: list[PreparedTask], inserted: list[Row]) -> list[Task]:
    """The tasks as created, from what their insert returned (in any order)."""
    by_id = {row["id"]: row for row in inserted}
    made = []
    for task in tasks:
        row = by_id[task.id]
        made.append(rows.created(task, rows.moment(row, "created_at"), row["run_at"]))
    return made


def _explain_misses(
    sql: statements.Statements,
    conn: Connection,
    leases: Sequence[Lease],
    batch: list[int],
    outcomes: list[Answer | None],
    *,
    target: Status,
) -> None:
    """Fill in the refusal of every item of ``batch`` the write did not match,
    from the tasks as they are now."""
    missed = [i for i in batch if outcomes[i] is None]
    if not missed:
        return
    ids = [leases[i].task_id for i in missed]
    found = sql.fetch(conn, "get_tasks", {"ids": ids})
    current = {row["id"]: rows.task(row) for row in found}
    for i in missed:
        outcomes[i] = refusal(current.get(leases[i].task_id), leases[i], target)


def _check_pool_sizes(pool_min: int, pool_max: int) -> None:
    if isinstance(pool_min, bool) or not isinstance(pool_min, int) or pool_min < 0:
        raise ConfigError(f"pool_min must be an integer of at least 0, not {pool_min!r}")
    if isinstance(pool_max, bool) or not isinstance(pool_max, int) or pool_max < max(pool_min, 1):
        raise ConfigError(f"pool_max must be an integer of at least pool_min and 1: {pool_max!r}")
