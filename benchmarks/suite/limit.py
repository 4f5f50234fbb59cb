"""The database's own limit on this machine, for context beside tenure's numbers.

How many single-row ``UPDATE … RETURNING`` transactions per second one
connection gets, and how many rows per second when each transaction updates 100
rows in one statement (tenure's batches are single statements too). Rows are
picked at random from a table of the benchmark's own. SQLite runs a sqlite3
loop with tenure's settings (WAL, synchronous FULL); PostgreSQL runs pgbench
when it is installed, else a psycopg loop (see ``limit_postgres``).
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from benchmarks.suite.config import Plan
from benchmarks.suite.metrics import Metric
from benchmarks.suite.sqlite_target import SQLiteTarget
from benchmarks.suite.target import Target

ROWS = 10_000
BATCH = 100

Rate = Callable[[int, float], float]
"""(rows per transaction, seconds to run) → transactions per second."""


def measure(target: Target, plan: Plan) -> list[Metric]:
    seconds = plan.sizes.limit_seconds
    metrics = []
    with _rates(target) as (method, rate):
        for size in (1, BATCH):
            samples = []
            for run in range(1, plan.repeat + 1):
                samples.append(rate(size, seconds) * size)
                plan.say(
                    f"{method}, {size} row(s) per transaction, run {run}: {samples[-1]:,.0f}/s"
                )
            metrics.append(_metric(size, method, seconds, samples))
    return metrics


def _metric(size: int, method: str, seconds: float, samples: list[float]) -> Metric:
    """Single rows are counted in transactions, batches in rows."""
    key, unit = ("limit.single", "txn/s") if size == 1 else (f"limit.batch_{size}", "rows/s")
    label = f"db limit: {size}-row UPDATE…RETURNING per txn"
    params = {"rows_per_transaction": size, "table_rows": ROWS, "seconds": seconds}
    return Metric(key, label, unit, True, samples, {**params, "method": method})


def _rates(target: Target) -> AbstractContextManager[tuple[str, Rate]]:
    if isinstance(target, SQLiteTarget):
        return _sqlite_rates(target)
    from benchmarks.suite.limit_postgres import postgres_rates  # noqa: PLC0415 - optional extra

    return postgres_rates(target)


@contextmanager
def _sqlite_rates(target: SQLiteTarget) -> Iterator[tuple[str, Rate]]:
    # isolation_level IMMEDIATE: sqlite3 opens each write with BEGIN IMMEDIATE,
    # as the store does, and commit() ends it.
    conn = sqlite3.connect(target.directory / "limit.db", isolation_level="IMMEDIATE")
    try:
        for setup in ("use_wal", "synchronous_full", "limit_setup"):
            conn.execute(target.Q[setup])
        conn.execute(target.Q["limit_seed"], {"rows": ROWS})
        conn.commit()

        def rate(size: int, seconds: float) -> float:
            return _loop(conn, target.Q["limit_update"], size, seconds)

        yield "sqlite3 loop", rate
    finally:
        conn.close()


def _loop(conn: sqlite3.Connection, update: str, size: int, seconds: float) -> float:
    picks = random.Random(size)
    done = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        first = picks.randint(1, ROWS - size + 1)
        conn.execute(update, {"first": first, "last": first + size - 1}).fetchall()
        conn.commit()
        done += 1
    return done / (time.perf_counter() - started)
