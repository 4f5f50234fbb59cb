"""Huey on SQLite and on Redis, as its documentation sets it up.

Setup (Huey 3.5 docs: consumer, SQLite storage): ``SqliteHuey(name,
filename=...)`` with its defaults (WAL, SQLite's default synchronous, which is
FULL in WAL mode here, as tenure's) and ``RedisHuey(name, url=...)`` with its
defaults (blocking BRPOP dequeue, results in a hash). Workers are
``huey_consumer`` processes (here ``python -m huey.bin.huey_consumer``) with
``-k thread -w 4`` (the documented thread worker type, 4 of them as tenure's
4 threads), ``-n`` (no periodic tasks, as tenure's ``--no-scheduler``), the
default polling (0.1 s, backing off by 1.15 up to 10 s when idle; only SQLite
polls) and ``-q`` (errors only: no log line per task).

Enqueue is calling the task. Huey has no bulk enqueue: the bulk measurement
goes one call per task, and says so. A worker's completion is seen through
Huey's own result store: the no-op returns True, so each finished task leaves
one result (``result_count()``); ``pending_count()`` is what waits in the queue.
"""

from __future__ import annotations

import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import huey as huey_package
import redis
from huey import Huey, RedisHuey, SqliteHuey
from huey.api import TaskWrapper

from benchmarks.compare.system import (
    URL_ENV,
    Progress,
    Settings,
    SQLiteFiles,
    System,
    record_start,
    timed_calls,
)
from benchmarks.suite.producers import Source

CONSUMER_APP = "benchmarks.compare.huey_app.huey"
NAME = "compare"
WORKERS = 4


def noop() -> bool:
    """Does nothing; its result (True) is what tells the benchmark it ran."""
    return True


def build(url: str) -> tuple[Huey, TaskWrapper, TaskWrapper]:
    """A Huey on ``url`` (``redis://...`` or a SQLite file path) with the two tasks."""
    queue: Huey = (
        RedisHuey(NAME, url=url) if url.startswith("redis://") else SqliteHuey(NAME, filename=url)
    )
    no_op = queue.task(name="compare.noop")(noop)
    mark = queue.task(name="compare.mark")(record_start)
    return queue, no_op, mark


def producer(url: str) -> TaskWrapper:
    """A producer of the many-producers measurement: a Huey on ``url``; calling
    its no-op task enqueues one."""
    return build(url)[1]


class HueySystem(System):
    huey: Huey
    noop: TaskWrapper
    mark: TaskWrapper
    bulk = False
    setup = (
        f"huey_consumer -k thread -w {WORKERS} (at concurrency 10: -w 10) -n -q (default "
        "polling); call the task (no bulk API)"
    )

    def __init__(self, store: str, settings: Settings) -> None:
        self.key = f"huey-{store}"
        self.versus = "tenure-sqlite" if store == "sqlite" else "tenure-postgres"
        self.store = store
        self.redis_url = settings.redis_url
        self.files = SQLiteFiles(settings.folder, "huey")
        self.templates: dict[int, Path] = {}
        self.url = ""

    def fresh(self) -> None:
        if self.store == "redis":
            redis.Redis.from_url(self.redis_url).flushdb()  # a db number of our own
            self.url = self.redis_url
        else:
            self._disconnect()
            self.url = str(self.files.fresh())
        self.huey, self.noop, self.mark = build(self.url)

    def enqueue_each(self, count: int) -> list[float]:
        return timed_calls(self.noop, count)

    def enqueue_bulk(self, count: int) -> None:
        self.enqueue_each(count)  # no bulk API

    def fill(self, count: int) -> None:
        """On SQLite, one call per task takes minutes for a big backlog: the
        backlog is enqueued that way once, into a template file, and each
        fill copies that file (SQLite's backup API)."""
        if self.store == "redis":
            self.enqueue_each(count)
            return
        template = self.templates.get(count)
        if template is None:
            template = self.files.folder / f"huey-template-{count}.db"
            queue, no_op, _ = build(str(template))
            for _ in range(count):
                no_op()
            queue.storage.close()
            self.templates[count] = template
        self._disconnect()
        with (
            closing(sqlite3.connect(template)) as source,
            closing(sqlite3.connect(self.url)) as copy,
        ):
            source.backup(copy)

    def producer(self) -> Source:
        """Threads share one Huey (its storage keeps a connection per thread)."""
        return Source(f"{__name__}:producer", (self.url,))

    def enqueue_mark(self, index: int) -> None:
        self.mark(index)

    def progress(self) -> Progress:
        return Progress(queued=self.huey.pending_count(), finished=self.huey.result_count())

    def worker_argv(self, concurrency: int | None = None) -> list[str]:
        return [
            *(sys.executable, "-m", "huey.bin.huey_consumer", CONSUMER_APP),
            *("-k", "thread", "-w", str(concurrency or WORKERS), "-n", "-q"),
        ]

    def worker_env(self) -> dict[str, str]:
        return {URL_ENV: self.url}

    def facts(self) -> dict[str, Any]:
        facts: dict[str, Any] = {"huey": huey_package.__version__}
        if self.store == "redis":
            server = redis.Redis.from_url(self.redis_url)
            facts["redis"] = server.info("server")["redis_version"]
            facts["redis-py"] = redis.__version__
            facts["appendonly"] = server.config_get("appendonly").get("appendonly")
        else:
            [(mode,)] = self.huey.storage.sql("pragma synchronous", results=True)
            facts["sqlite_synchronous"] = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}[mode]
            facts["sqlite"] = sqlite3.sqlite_version
        return facts

    def close(self) -> None:
        if self.store == "redis":
            redis.Redis.from_url(self.redis_url).flushdb()
        self._disconnect()
        self.files.close()  # the templates go with the run's folder

    def _disconnect(self) -> None:
        if self.url and self.store == "sqlite":
            self.huey.storage.close()
