"""The store's own limit on a durable enqueue: one-row INSERT transactions.

What a queue's one-task-per-call enqueue can at best approach on this machine:
a client that does nothing but commit a one-row insert, one transaction after
the other, on the same store as the queue. PostgreSQL: ``pgbench`` (C, no
Python in the way) with one client replaying ``pgbench_insert.sql``, prepared
(psycopg prepares tenure's statements after their fifth run, asyncpg prepares
PgQueuer's), each transaction's latency logged (``-l``). SQLite: a ``sqlite3``
loop, with tenure's settings (WAL, synchronous FULL), ``BEGIN IMMEDIATE``, one
insert, ``COMMIT``, each timed. Measured on the store tenure has just been
given, so that its enqueue and its limit are read from the same run. The
statements are the benchmark suite's (``benchmarks/suite/*.sql``).

A second limit is the store's for tenure's own work: the very statement tenure
sends for one task (its insert, with the triggers that write its event and
tallies), replayed by the same clients on a fresh tenure store. Between the two
limits lies what tenure's schema costs the store; between the second and the
enqueue, what tenure's client costs the caller.

A third is the store's for a bulk enqueue: one transaction writing a batch of
no-op tasks with the statements tenure's bulk write sends (PostgreSQL: the
transaction's clock read, then ``COPY``; SQLite: ``insert_task`` for each
row), their rows made before the clock starts, so that the client does
nothing but send them: one batch per store, new but for one task, as the bulk
enqueue it bounds is measured.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.suite import BenchError
from benchmarks.suite.limit_postgres import duration, pgbench, run_pgbench, run_pgbench_file
from benchmarks.suite.postgres_target import PostgresTarget
from benchmarks.suite.sqlite_target import SQLiteTarget
from tenure.ids import new_id
from tenure.serializer import loads
from tenure.store import DEFAULT_MAX_PAYLOAD_BYTES, NewTask, validate
from tenure.store.postgres import copying
from tenure.store.postgres import rows as postgres_rows
from tenure.store.postgres.arrays import text_encoding
from tenure.store.postgres.driver import configure, connection_kwargs
from tenure.store.postgres.schema import queries as postgres_queries
from tenure.store.sqlite import rows as sqlite_rows
from tenure.store.sqlite.schema import Q as SQLITE_Q
from tenure.store.types import PreparedTask

POSTGRES_Q = postgres_queries()

SCRIPT = "pgbench_insert.sql"
DATA = '{"args": [], "kwargs": {}}'
"""A no-op task's data, the row's payload (pgbench_insert.sql inserts the same)."""


ID_EXPRESSION = (
    "'probe-' || :client_id || '-' || (extract(epoch FROM clock_timestamp()) * 1e6)::bigint"
)
"""A new id for each transaction of the replayed task insert, increasing as
tenure's own are (ids in random order would cost its id index more)."""


def postgres_insert(url: str, seconds: float) -> list[float]:
    """Seconds each one-row INSERT transaction of one pgbench client took."""
    executable = _pgbench()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(PostgresTarget.Q["limit_insert_setup"])
    with tempfile.TemporaryDirectory(prefix="tenure-limit-") as folder:
        run_pgbench(executable, SCRIPT, url, [*duration(seconds), *_logged(folder)])
        return _latencies(folder)


def postgres_task_insert(
    url: str, seconds: float, topic: str, name: str, clients: int = 1
) -> list[float]:
    """Seconds each transaction of ``clients`` pgbench clients took, replaying
    tenure's own statement for one no-op task ``name`` of ``topic`` on ``url``
    (a migrated tenure store), values inlined, a new id each time: with several
    clients, what the store allows as many producers, each in a process of its
    own, one task per transaction."""
    executable = _pgbench()
    with tempfile.TemporaryDirectory(prefix="tenure-limit-") as folder:
        script = Path(folder) / "statement.sql"
        script.write_text(task_insert_script(url, noop_task(topic, name)))
        options = [*duration(seconds), *_logged(folder)]
        run_pgbench_file(executable, script, url, options, clients)
        return _latencies(folder)


def task_insert_script(url: str, task: PreparedTask) -> str:
    """A pgbench script of the statement the PostgreSQL store sends to create
    ``task`` alone (``insert_one``), its values written in, its id
    :data:`ID_EXPRESSION`."""
    marker = "tenure-probe-id"
    params = postgres_rows.insert_one_params(dataclasses.replace(task, id=marker), None)
    with psycopg.connect(url) as conn:
        statement = psycopg.ClientCursor(conn).mogrify(POSTGRES_Q["insert_one"], params)
    if statement.count(f"'{marker}'") != 1:
        raise BenchError("the task insert does not name its id exactly once")
    statement = statement.replace(f"'{marker}'", f"({ID_EXPRESSION})")
    return statement.rstrip().rstrip(";") + ";\n"


def noop_task(topic: str, name: str) -> PreparedTask:
    """A no-op task of the comparison's, as the stores receive it from ``enqueue()``."""
    task = NewTask(topic=topic, name=name, data=loads(DATA))
    return validate.prepare(task, DEFAULT_MAX_PAYLOAD_BYTES)


def postgres_task_copy(url: str, topic: str, name: str, count: int) -> float:
    """Seconds one transaction of one client took, writing ``count`` no-op
    tasks ``name`` of ``topic`` into the tenure store at ``url`` as its bulk
    enqueue does (``copying.copy_rows``' statements), after a first write of
    one task, as the comparison's bulk enqueue follows a first enqueue."""
    task = noop_task(topic, name)
    with psycopg.connect(url, **connection_kwargs(url, "limit")) as conn:
        configure(conn)
        return _after_one(lambda size: _copied(conn, task, size), count)


def _copied(conn: psycopg.Connection[Any], task: PreparedTask, count: int) -> Callable[[], object]:
    """The write of ``count`` copies of ``task`` (new ids), its rows formatted
    and encoded now, as ``copying.copy_rows`` sends them."""
    at = datetime.now(UTC)
    tasks = [dataclasses.replace(task, id=new_id()) for _ in range(count)]
    encoding = text_encoding(conn.info.encoding)
    made = [chunk.encode(encoding) for chunk in copying.copy_text(tasks, at)]

    def write() -> None:
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(POSTGRES_Q["transaction_now"])
            with cur.copy(POSTGRES_Q["copy_tasks"]) as copy:
                for chunk in made:
                    copy.write(chunk)

    return write


def sqlite_task_batch(path: Path, topic: str, name: str, count: int) -> float:
    """Seconds one transaction of a ``sqlite3`` client took, writing ``count``
    no-op tasks into the tenure store at ``path`` as its bulk enqueue does
    (``insert_task`` for each, one ``BEGIN IMMEDIATE`` … ``COMMIT``), after a
    first write of one task."""
    task = noop_task(topic, name)

    def batch(size: int) -> Callable[[], object]:
        now = time.time()
        made = [
            sqlite_rows.insert_row(dataclasses.replace(task, id=new_id()), now) for _ in range(size)
        ]

        def write() -> None:
            conn.execute(SQLITE_Q["begin_write"])
            conn.executemany(SQLITE_Q["insert_task"], made)
            conn.commit()

        return write

    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        for setup in ("use_wal", "synchronous_full"):
            conn.execute(SQLITE_Q[setup])
        return _after_one(batch, count)


def _after_one(batch: Callable[[int], Callable[[], object]], count: int) -> float:
    """Seconds the write of ``count`` took, made by ``batch`` before its clock
    starts, after an untimed write of one (the connection's first statements).

    One batch on a store that is new but for that one task, as the bulk
    enqueue it is compared with meets it: batch after batch, a store grows
    and checkpoints, and SQLite then wrote a batch in a third more time."""
    batch(1)()
    write = batch(count)
    began = time.perf_counter()
    write()
    return time.perf_counter() - began


def _pgbench() -> Path:
    executable = pgbench()
    if executable is None:
        raise BenchError("pgbench is not installed (Debian: postgresql-client-15)")
    return executable


def _logged(folder: str) -> list[str]:
    """pgbench's options to log each transaction's latency under ``folder``."""
    return ["-l", "--log-prefix", f"{folder}/log"]


def _latencies(folder: str) -> list[float]:
    """The seconds of each transaction pgbench logged under ``folder``."""
    # Each line: client, transaction, latency in microseconds, script, epoch, micros.
    lines = "".join(path.read_text() for path in Path(folder).glob("log*"))
    return [int(line.split()[2]) / 1e6 for line in lines.splitlines() if line.strip()]


def sqlite_insert(path: Path, seconds: float) -> list[float]:
    """Seconds each one-row INSERT transaction of a ``sqlite3`` loop took."""
    q = SQLiteTarget.Q
    # isolation_level IMMEDIATE: sqlite3 opens each insert with BEGIN IMMEDIATE,
    # as the store does, and commit() ends it (as the suite's limit loop).
    with closing(sqlite3.connect(path, isolation_level="IMMEDIATE")) as conn:
        for setup in ("use_wal", "synchronous_full", "limit_insert_setup"):
            conn.execute(q[setup])
        conn.commit()
        return _timed(seconds, lambda: conn.execute(q["limit_insert"], {"data": DATA}), conn)


def sqlite_task_insert(path: Path, seconds: float, topic: str, name: str) -> list[float]:
    """Seconds each transaction of a ``sqlite3`` loop took, writing tenure's own
    insert of one no-op task ``name`` of ``topic`` (``insert_task``, its
    triggers) into the tenure store at ``path``, as the store's write does:
    ``BEGIN IMMEDIATE``, the insert, ``COMMIT``, at tenure's settings."""
    task = noop_task(topic, name)

    def insert() -> None:
        params = sqlite_rows.insert_row(dataclasses.replace(task, id=new_id()), time.time())
        conn.execute(SQLITE_Q["begin_write"])
        conn.execute(SQLITE_Q["insert_task"], params)

    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        for setup in ("use_wal", "synchronous_full"):
            conn.execute(SQLITE_Q[setup])
        return _timed(seconds, insert, conn)


def _timed(seconds: float, write: Callable[[], object], conn: sqlite3.Connection) -> list[float]:
    """Seconds each of ``write`` then ``conn``'s commit took, one transaction
    after the other, for ``seconds``."""
    took: list[float] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        began = time.perf_counter()
        write()
        conn.commit()
        took.append(time.perf_counter() - began)
    return took
