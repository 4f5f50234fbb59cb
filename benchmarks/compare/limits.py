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
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from contextlib import closing
from pathlib import Path

import psycopg

from benchmarks.suite import BenchError
from benchmarks.suite.limit_postgres import duration, pgbench, run_pgbench
from benchmarks.suite.postgres_target import PostgresTarget
from benchmarks.suite.sqlite_target import SQLiteTarget

SCRIPT = "pgbench_insert.sql"
DATA = '{"args": [], "kwargs": {}}'
"""A no-op task's data, the row's payload (pgbench_insert.sql inserts the same)."""


def postgres_insert(url: str, seconds: float) -> list[float]:
    """Seconds each one-row INSERT transaction of one pgbench client took."""
    executable = pgbench()
    if executable is None:
        raise BenchError("pgbench is not installed (Debian: postgresql-client-15)")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(PostgresTarget.Q["limit_insert_setup"])
    with tempfile.TemporaryDirectory(prefix="tenure-limit-") as folder:
        logged = ["-l", "--log-prefix", f"{folder}/log"]
        run_pgbench(executable, SCRIPT, url, [*duration(seconds), *logged])
        # Each line: client, transaction, latency in microseconds, script, epoch, micros.
        lines = "".join(path.read_text() for path in Path(folder).glob("log*"))
    return [int(line.split()[2]) / 1e6 for line in lines.splitlines() if line.strip()]


def sqlite_insert(path: Path, seconds: float) -> list[float]:
    """Seconds each one-row INSERT transaction of a ``sqlite3`` loop took."""
    q = SQLiteTarget.Q
    took: list[float] = []
    # isolation_level IMMEDIATE: sqlite3 opens each insert with BEGIN IMMEDIATE,
    # as the store does, and commit() ends it (as the suite's limit loop).
    with closing(sqlite3.connect(path, isolation_level="IMMEDIATE")) as conn:
        for setup in ("use_wal", "synchronous_full", "limit_insert_setup"):
            conn.execute(q[setup])
        conn.commit()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            began = time.perf_counter()
            conn.execute(q["limit_insert"], {"data": DATA})
            conn.commit()
            took.append(time.perf_counter() - began)
    return took
