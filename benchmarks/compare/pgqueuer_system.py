"""PgQueuer on PostgreSQL, as its documentation sets it up.

Setup (PgQueuer 1.6 docs: quickstart, performance tuning): the schema of
``pgq install`` (durability "durable", the default: every table logged) plus
the autovacuum settings of ``pgq autovac``, both applied through the same
``Queries`` calls the CLI makes; the asyncpg driver; workers are ``pgq run
module:factory`` processes (here ``python -m pgqueuer run``), whose factory is
an ``@asynccontextmanager`` yielding ``PgQueuer.from_asyncpg_connection`` on a
dedicated connection, with async entrypoints; ``pgq run``'s defaults
(batch size 10, 30 s dequeue timeout, idle workers woken by LISTEN/NOTIFY),
log level INFO included (PgQueuer logs nothing per job at INFO). Enqueue is
``Queries.enqueue``: one job per call, or lists for a bulk insert.

Progress is read with ``Queries.queue_size()`` (a count per status of the queue
table, where a job's row is deleted once it completed and was logged).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import asyncpg
from pgqueuer import PgQueuer, Queries
from pgqueuer import __version__ as pgqueuer_version
from pgqueuer.db import AsyncpgDriver
from pgqueuer.models import Job

from benchmarks.compare.system import (
    URL_ENV,
    PostgresDatabases,
    Progress,
    Settings,
    System,
    record_start,
)
from benchmarks.suite.producers import Source

FACTORY = "benchmarks.compare.pgqueuer_system:main"
NOOP = "compare_noop"
MARK = "compare_mark"
T = TypeVar("T")


@asynccontextmanager
async def main() -> AsyncIterator[PgQueuer]:
    """The worker factory (``pgq run benchmarks.compare.pgqueuer_system:main``)."""
    connection = await asyncpg.connect(os.environ[URL_ENV])
    pgq = PgQueuer.from_asyncpg_connection(connection)

    async def noop(job: Job) -> None:
        """Does nothing."""

    async def mark(job: Job) -> None:
        record_start(int(job.payload or b"-1"))

    # Registered by calling the decorator: PgQueuer is untyped where mypy runs
    # (.venv has no competitors), and a bare decorator would untype the function.
    pgq.entrypoint(NOOP)(noop)
    pgq.entrypoint(MARK)(mark)

    try:
        yield pgq
    finally:
        await connection.close()


class Producer:
    """A producer of the many-producers measurement: its own connection and
    event loop, enqueueing with ``Queries.enqueue``, one job per call."""

    def __init__(self, url: str) -> None:
        self.runner = asyncio.Runner()
        self.connection = self.runner.run(asyncpg.connect(url))
        self.queries = Queries(AsyncpgDriver(self.connection))

    def __call__(self) -> None:
        self.runner.run(self.queries.enqueue(NOOP, None))

    def close(self) -> None:
        self.runner.run(self.connection.close())
        self.runner.close()


class PgQueuerSystem(System):
    queries: Queries
    key = "pgqueuer-postgres"
    versus = "tenure-postgres"
    bulk = True
    setup = (
        "pgq run (asyncpg, async entrypoints, batch 10, LISTEN/NOTIFY; at concurrency 10: "
        "--max-concurrent-tasks 10 --batch-size 5); pgq install + autovac; "
        "Queries.enqueue (lists for bulk)"
    )

    def __init__(self, settings: Settings) -> None:
        self.places = PostgresDatabases(settings.postgres_url, "pgqueuer_compare")
        self.runner = asyncio.Runner()
        self.connection: asyncpg.Connection | None = None
        self.url = ""
        self.enqueued = 0

    def fresh(self) -> None:
        self._disconnect()
        self.url = self.places.fresh()
        self.connection = self._run(asyncpg.connect(self.url))
        self.queries = Queries(AsyncpgDriver(self.connection))
        self._run(self.queries.install())
        self._run(self.queries.optimize_autovacuum())
        self.enqueued = 0

    def enqueue_each(self, count: int) -> list[float]:
        async def each() -> list[float]:
            took = []
            for _ in range(count):
                began = time.perf_counter()
                await self.queries.enqueue(NOOP, None)
                took.append(time.perf_counter() - began)
            return took

        took = self._run(each())
        self.enqueued += count
        return took

    def enqueue_bulk(self, count: int) -> None:
        self._run(self.queries.enqueue([NOOP] * count, [None] * count, [0] * count))
        self.enqueued += count

    def producer(self) -> Source:
        """An asyncpg connection serves one caller at a time: one per thread."""
        return Source(f"{__name__}:Producer", (self.url,), per_thread=True)

    def enqueue_mark(self, index: int) -> None:
        self._run(self.queries.enqueue(MARK, str(index).encode()))
        self.enqueued += 1

    def progress(self) -> Progress:
        counts = self._run(self.queries.queue_size())
        queued = sum(row.count for row in counts if row.status == "queued")
        unfinished = sum(row.count for row in counts)
        return Progress(queued=queued, finished=self.enqueued - unfinished)

    def worker_argv(self, concurrency: int | None = None) -> list[str]:
        # PgQueuer wants its limit at least twice its batch: a limit of 10 takes 5 at a time.
        limit = (
            []
            if concurrency is None
            else ["--max-concurrent-tasks", str(concurrency), "--batch-size", str(concurrency // 2)]
        )
        return [sys.executable, "-m", "pgqueuer", "run", *limit, FACTORY]

    def worker_env(self) -> dict[str, str]:
        return {URL_ENV: self.url}

    def facts(self) -> dict[str, Any]:
        return {
            "pgqueuer": pgqueuer_version,
            "asyncpg": asyncpg.__version__,
            "postgres": self.places.version(),
        }

    def close(self) -> None:
        self._disconnect()
        self.places.close()
        self.runner.close()

    def _disconnect(self) -> None:
        if self.connection is not None:
            self._run(self.connection.close())
            self.connection = None

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        return self.runner.run(work)
