"""tenure, through its public API, on SQLite and on PostgreSQL.

Setup: ``tenure.App(url)`` with two tasks (``@app.task``); enqueue with
``.enqueue()`` (one transaction per task) and ``.enqueue_many()`` (one for all).
Workers are real ``tenure worker`` processes, as a deployment starts them:
``--no-scheduler`` (nothing is scheduled, and the competitors' workers run no
scheduler either), ``--concurrency 4`` (the default, made explicit: 4
threads), the default prefetch (following the work), the default idle
wake-ups (LISTEN/NOTIFY on PostgreSQL; on SQLite, the database's change
counter), the default log level (INFO: a line per task ending, written to a
file). SQLite runs with tenure's own settings (WAL, synchronous FULL).
"""

from __future__ import annotations

import sys
from typing import Any

from benchmarks.compare import limits
from benchmarks.compare.system import (
    PostgresDatabases,
    Progress,
    Settings,
    SQLiteFiles,
    System,
    record_start,
    timed_calls,
)
from benchmarks.suite.producers import Source
from tenure import App, Status, __version__
from tenure.function import TaskFunction

APP_PATH = "benchmarks.compare.tenure_system:app"
TOPIC = "compare"
NOOP = "compare.noop"
CONCURRENCY = 4


def noop() -> None:
    """Does nothing."""


def build(url: str | None) -> tuple[App, TaskFunction[[], None], TaskFunction[[int], None]]:
    """An App on ``url`` with the benchmark's two tasks."""
    app = App(url)
    no_op = app.task(name=NOOP, topic=TOPIC)(noop)
    mark = app.task(name="compare.mark", topic=TOPIC)(record_start)
    return app, no_op, mark


app = build(None)[0]
"""What the worker processes run (``--app benchmarks.compare.tenure_system:app``)."""


class Producer:
    """A producer of the many-producers measurement: an App of its own on ``url``."""

    def __init__(self, url: str) -> None:
        self.app, self.noop, _ = build(url)

    def __call__(self) -> None:
        self.noop.enqueue()

    def close(self) -> None:
        self.app.close()


class Tenure(System):
    noop: TaskFunction[[], None]
    mark: TaskFunction[[int], None]
    bulk = True
    setup = (
        f"tenure worker --no-scheduler --concurrency {CONCURRENCY} (at concurrency 10: "
        "--concurrency 10; threads, default prefetch and idle wake-ups); "
        ".enqueue() / .enqueue_many()"
    )

    def __init__(self, store: str, settings: Settings) -> None:
        self.key = f"tenure-{store}"
        self.store = store
        self.places: PostgresDatabases | SQLiteFiles = (
            PostgresDatabases(settings.postgres_url, "tenure_compare")
            if store == "postgres"
            else SQLiteFiles(settings.folder, "tenure")
        )
        self.url = ""
        self.app: App | None = None

    def fresh(self) -> None:
        self._disconnect()
        place = self.places.fresh()
        self.url = place if isinstance(place, str) else f"sqlite:///{place}"
        self.app, self.noop, self.mark = build(self.url)
        _ = self.app.store  # creates the store and applies the migrations

    def enqueue_each(self, count: int) -> list[float]:
        return timed_calls(self.noop.enqueue, count)

    def enqueue_bulk(self, count: int) -> None:
        self.noop.enqueue_many([()] * count)

    def producer(self) -> Source:
        """Threads share one App (its pool), as a threaded server's do."""
        return Source(f"{__name__}:Producer", (self.url,))

    def enqueue_mark(self, index: int) -> None:
        self.mark.enqueue(index)

    def store_limit(self, seconds: float) -> list[float]:
        self.fresh()
        if isinstance(self.places, PostgresDatabases):
            return limits.postgres_insert(self.url, seconds)
        assert self.places.current is not None  # fresh() made the file
        return limits.sqlite_insert(self.places.current, seconds)

    def store_task_limit(self, seconds: float, clients: int = 1) -> list[float] | None:
        if clients > 1 and not isinstance(self.places, PostgresDatabases):
            return None  # SQLite takes one writer at a time: the one-client limit holds
        self.fresh()
        if isinstance(self.places, PostgresDatabases):
            return limits.postgres_task_insert(self.url, seconds, TOPIC, NOOP, clients)
        assert self.places.current is not None  # fresh() made the file
        return limits.sqlite_task_insert(self.places.current, seconds, TOPIC, NOOP)

    def store_bulk_limit(self, count: int) -> list[float]:
        self.fresh()
        if isinstance(self.places, PostgresDatabases):
            return [limits.postgres_task_copy(self.url, TOPIC, NOOP, count)]
        assert self.places.current is not None  # fresh() made the file
        return [limits.sqlite_task_batch(self.places.current, TOPIC, NOOP, count)]

    def progress(self) -> Progress:
        """Read as a user watches a queue (the dashboard, ``tenure stats``): from
        the store's tallies, a few rows whatever the backlog, both figures from
        one snapshot. Counting the tasks table instead reads every task in the
        status on each poll, about a quarter of the database's CPU time during a
        drain of 20,000 tasks on PostgreSQL: a cost of the measurement, not of
        the queue."""
        assert self.app is not None
        stats = self.app.store.task_stats()
        return Progress(queued=stats.total(Status.PENDING), finished=stats.total(Status.DONE))

    def worker_argv(self, concurrency: int | None = None) -> list[str]:
        return [
            *(sys.executable, "-m", "tenure", "worker", "--app", APP_PATH, "--url", self.url),
            *("--no-scheduler", "--concurrency", str(concurrency or CONCURRENCY)),
        ]

    def facts(self) -> dict[str, Any]:
        facts: dict[str, Any] = {"tenure": __version__}
        if isinstance(self.places, PostgresDatabases):
            facts["postgres"] = self.places.version()
        else:
            facts["sqlite"] = "WAL, synchronous FULL (tenure's settings)"
        return facts

    def close(self) -> None:
        self._disconnect()
        self.places.close()

    def _disconnect(self) -> None:
        if self.app is not None:
            self.app.close()
            self.app = None
