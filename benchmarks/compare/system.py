"""What each system under comparison provides, and what they all share.

A :class:`System` is one queue on one store (``tenure-sqlite``, ``huey-redis``
...). The runner only calls its methods, so every system is measured by the
same code. The tasks of every system are the same two: a no-op, and ``mark``,
which appends ``index time.time()`` to the file named by :data:`MARKS_ENV` the
moment it starts (the pickup measurement reads it; one clock, this machine's).
"""

from __future__ import annotations

import os
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from benchmarks.suite.processes import Workers
from benchmarks.suite.producers import Source

ROOT = Path(__file__).resolve().parents[2]
MARKS_ENV = "TENURE_COMPARE_MARKS"
"""The file the ``mark`` task appends its start time to (worker processes)."""
URL_ENV = "TENURE_COMPARE_URL"
"""The store the competitors' worker processes connect to."""
CHUNK = 1_000
"""Tasks per bulk call while filling a backlog."""


def record_start(index: int) -> None:
    """The ``mark`` task of every system: note when task ``index`` started."""
    started = time.time()
    with open(os.environ[MARKS_ENV], "a", encoding="ascii") as marks:
        marks.write(f"{index} {started!r}\n")


def read_marks(path: Path) -> dict[int, float]:
    """Start time of each index marked so far (the first, should one run twice)."""
    found: dict[int, float] = {}
    if path.exists():
        for line in path.read_text(encoding="ascii").splitlines():
            index, _, stamp = line.partition(" ")
            if stamp:
                found.setdefault(int(index), float(stamp))
    return found


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the stores live: the servers, and a folder for SQLite files."""

    postgres_url: str
    redis_url: str
    folder: Path


@dataclass(frozen=True, slots=True)
class Progress:
    queued: int
    """Tasks enqueued and not yet taken by a worker."""
    finished: int
    """Tasks completed."""


class System(ABC):
    """One queue on one store, as the benchmark drives it."""

    key: str
    """``<queue>-<store>``: names it in the table and the JSON."""
    versus: str | None = None
    """The tenure system its numbers are divided into (competitors only)."""
    bulk: bool = True
    """Whether it has a bulk enqueue; without one, :meth:`enqueue_bulk` goes one by one."""
    setup: str
    """How it is set up and run, for the report."""

    @abstractmethod
    def fresh(self) -> None:
        """Point at a new, empty store, created (schema included) and connected."""

    @abstractmethod
    def enqueue_each(self, count: int) -> list[float]:
        """Enqueue ``count`` no-op tasks, one call (one round trip) each; the
        seconds each call took (``time.perf_counter`` around the call alone)."""

    @abstractmethod
    def enqueue_bulk(self, count: int) -> None:
        """Enqueue ``count`` no-op tasks in one call."""

    def fill(self, count: int) -> None:
        """A backlog of ``count`` no-op tasks, the fastest way the system has."""
        for first in range(0, count, CHUNK):
            self.enqueue_bulk(min(CHUNK, count - first))

    @abstractmethod
    def producer(self) -> Source:
        """How a producer thread or process of the many-producers measurement
        enqueues one no-op task per call on the current store."""

    @abstractmethod
    def enqueue_mark(self, index: int) -> None:
        """Enqueue one ``mark(index)`` task."""

    @abstractmethod
    def progress(self) -> Progress:
        """What the store says now (a cheap query or two)."""

    @abstractmethod
    def worker_argv(self, concurrency: int | None = None) -> list[str]:
        """The command line of one worker process on the current store: its
        default concurrency, or tasks run at once up to ``concurrency``."""

    def store_limit(self, seconds: float) -> list[float] | None:
        """The store's own limit on a durable enqueue, on a fresh store of the
        system's: the seconds each one-row INSERT transaction took, for
        ``seconds`` (``benchmarks.compare.limits``). Measured once per store,
        on tenure's; ``None`` elsewhere (before making any store)."""
        return None

    def store_task_limit(self, seconds: float, clients: int = 1) -> list[float] | None:
        """The store's own limit on the statement tenure sends to enqueue one
        task, replayed on a fresh store of the system's for ``seconds`` by
        ``clients`` clients at once, each with a connection of its own (as many
        producer processes write): the seconds each transaction took
        (``benchmarks.compare.limits``). Measured on tenure's; ``None``
        elsewhere."""
        return None

    def store_bulk_limit(self, count: int) -> list[float] | None:
        """The store's own limit on the statements tenure's bulk enqueue sends
        for ``count`` tasks, their rows made beforehand, on a fresh store of the
        system's: the seconds its one transaction took, in a list
        (``benchmarks.compare.limits``). Measured on tenure's; ``None`` elsewhere."""
        return None

    def worker_env(self) -> dict[str, str]:
        """Environment the worker processes need besides the marks file."""
        return {}

    @abstractmethod
    def facts(self) -> dict[str, Any]:
        """Versions and settings that explain its numbers."""

    @abstractmethod
    def close(self) -> None:
        """Disconnect and remove what it created."""


class PostgresDatabases:
    """A new throwaway database on the server for each fresh store; the previous
    one, and the last one on :meth:`close`, is dropped."""

    def __init__(self, server_url: str, prefix: str) -> None:
        self.server_url = server_url
        self.prefix = prefix
        self.current: str | None = None

    def fresh(self) -> str:
        self.close()
        self.current = f"{self.prefix}_{uuid.uuid4().hex[:12]}"
        self._on_server(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.current)))
        return urlunsplit(urlsplit(self.server_url)._replace(path="/" + self.current))

    def version(self) -> str:
        with psycopg.connect(self.server_url, autocommit=True) as conn:
            row = conn.execute("SELECT current_setting('server_version')").fetchone()
        return str(row[0]) if row else "unknown"

    def close(self) -> None:
        if self.current is not None:
            drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            self._on_server(drop.format(sql.Identifier(self.current)))
            self.current = None

    def _on_server(self, query: sql.Composed) -> None:
        with psycopg.connect(self.server_url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(query)


class SQLiteFiles:
    """A new SQLite file for each fresh store, in the run's folder; the previous
    one is removed (with its -wal and -shm files)."""

    def __init__(self, folder: Path, prefix: str) -> None:
        self.folder = folder
        self.prefix = prefix
        self.made = 0
        self.current: Path | None = None

    def fresh(self) -> Path:
        self.close()
        self.made += 1
        self.current = self.folder / f"{self.prefix}-{self.made}.db"
        return self.current

    def close(self) -> None:
        if self.current is not None:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.current}{suffix}").unlink(missing_ok=True)
            self.current = None


def timed_calls(call: Callable[[], object], count: int) -> list[float]:
    """Call ``call`` ``count`` times; the seconds each call took (an
    ``enqueue_each`` of a system whose enqueue is a plain call)."""
    took = []
    for _ in range(count):
        began = time.perf_counter()
        call()
        took.append(time.perf_counter() - began)
    return took


def start_workers(
    system: System, count: int, env: Mapping[str, str], concurrency: int | None = None
) -> Workers:
    """``count`` worker processes of ``system``, run from the project's root."""
    return Workers(
        system.worker_argv(concurrency),
        count,
        env={"PYTHONPATH": str(ROOT), **system.worker_env(), **env},
        cwd=ROOT,
    )
