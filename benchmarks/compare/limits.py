"""The store's own limit on a durable enqueue: one-row INSERT transactions.

What a queue's one-task-per-call enqueue can at best approach on this machine:
a client that does nothing but commit a one-row insert, one transaction after
the other, on the same store as the queue. PostgreSQL: ``pgbench`` (C, no
Python in the way) with one client replaying ``INSERT INTO … VALUES (…)`` into
a table of its own, as a prepared statement (psycopg prepares tenure's
statements after their fifth run, asyncpg prepares PgQueuer's), each
transaction's latency logged (``-l``). SQLite: a ``sqlite3`` loop, with
tenure's settings (WAL, synchronous FULL), ``BEGIN IMMEDIATE``, one insert,
``COMMIT``, each timed. Measured on the store tenure has just been given, so
that its enqueue and its limit are read from the same run.
"""

from __future__ import annotations

import sqlite3
import subprocess
import tempfile
import time
from contextlib import closing
from pathlib import Path

import psycopg

from benchmarks.suite import BenchError
from benchmarks.suite.limit_postgres import pgbench

TABLE_SQL = "CREATE TABLE IF NOT EXISTS bench_limit_insert (id bigserial PRIMARY KEY, data text)"
INSERT_SQL = 'INSERT INTO bench_limit_insert (data) VALUES (\'{"args": [], "kwargs": {}}\');\n'


def postgres_insert(url: str, seconds: float) -> list[float]:
    """Seconds each one-row INSERT transaction of one pgbench client took."""
    executable = pgbench()
    if executable is None:
        raise BenchError("pgbench is not installed (Debian: postgresql-client-15)")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(TABLE_SQL)
    with tempfile.TemporaryDirectory(prefix="tenure-limit-") as folder:
        script = Path(folder) / "insert.sql"
        script.write_text(INSERT_SQL, encoding="ascii")
        argv = [str(executable), "-n", "-M", "prepared", "-c", "1", "-j", "1"]
        argv += ["-T", str(max(1, round(seconds))), "-l", "--log-prefix", f"{folder}/log"]
        # The argv is pgbench, fixed options, a file of ours and the benchmark's database.
        done = subprocess.run(  # noqa: S603
            [*argv, "-f", str(script), url],
            check=False,
            capture_output=True,
            text=True,
            timeout=600,
            cwd=folder,
        )
        if done.returncode != 0:
            raise BenchError(f"pgbench failed: {done.stderr.strip() or done.stdout.strip()}")
        # Each line: client, transaction, latency in microseconds, script, epoch, micros.
        lines = "".join(path.read_text() for path in Path(folder).glob("log*"))
    return [int(line.split()[2]) / 1e6 for line in lines.splitlines() if line.strip()]


def sqlite_insert(path: Path, seconds: float) -> list[float]:
    """Seconds each one-row INSERT transaction of a ``sqlite3`` loop took."""
    took: list[float] = []
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE IF NOT EXISTS bench_limit_insert (id INTEGER PRIMARY KEY, data)")
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            began = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO bench_limit_insert (data) VALUES (?)", ('{"args": [], "kwargs": {}}',)
            )
            conn.execute("COMMIT")
            took.append(time.perf_counter() - began)
    return took
