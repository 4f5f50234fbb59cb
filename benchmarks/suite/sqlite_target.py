"""SQLite as the benchmark uses it: a new file per measurement, in a temporary directory."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.suite.target import Params, Target
from tenure.store import open_store
from tenure.store.sqlfile import load_queries


class SQLiteTarget(Target):
    """A new SQLite file for each measurement, in a temporary directory."""

    name = "sqlite"
    Q = load_queries("benchmarks.suite", "sqlite.sql")

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="tenure-bench-")
        self.directory = Path(self._folder.name)
        self._made = 0
        self.path = self.directory / "none.db"
        self.url = f"sqlite:///{self.path}"

    def fresh(self) -> str:
        self._remove(self.path)  # a 1,000,000-task history takes room; keep one at a time
        self._made += 1
        self.path = self.directory / f"store-{self._made}.db"
        self.url = f"sqlite:///{self.path}"
        open_store(self.url).close()  # creates the file and applies the migrations
        return self.url

    def execute(self, query: str, params: Params | None = None) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        try:
            return conn.execute(self.Q[query], params or {}).fetchall()
        finally:
            conn.close()

    def facts(self) -> dict[str, str]:
        return {
            "version": sqlite3.sqlite_version,
            "journal_mode": "wal",
            "synchronous": "full (tenure's default)",
        }

    def close(self) -> None:
        self._folder.cleanup()

    @staticmethod
    def _remove(path: Path) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
