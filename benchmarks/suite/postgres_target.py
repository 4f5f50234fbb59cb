"""PostgreSQL as the benchmark uses it: one throwaway database for the whole run.

The database is created on the server the caller names, emptied between
measurements (cheaper than a new database, and just as empty) and dropped when
the run ends, whatever happened.
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from benchmarks.suite import BenchError
from benchmarks.suite.target import Params, Target
from tenure.store import open_store
from tenure.store.sqlfile import load_queries
from tenure.store.url import redact


class PostgresTarget(Target):
    """One throwaway database on the server at ``server_url``, dropped by ``close``."""

    name = "postgres"
    Q = load_queries("benchmarks.suite", "postgres.sql")
    SETTINGS = ("fsync", "max_connections", "shared_buffers", "synchronous_commit", "wal_level")

    def __init__(self, server_url: str) -> None:
        self.server_url = server_url
        self.database = f"tenure_bench_{uuid.uuid4().hex[:12]}"
        parts = urlsplit(server_url)
        self.url = urlunsplit(parts._replace(path="/" + self.database))
        try:
            self._on_server("create_database")
        except psycopg.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BenchError(
                f"cannot create a database on {redact(server_url)}: {first} "
                "(set TENURE_BENCH_POSTGRES_URL, or measure --stores sqlite)"
            ) from None
        self._migrated = False

    def fresh(self) -> str:
        if not self._migrated:
            open_store(self.url).close()  # applies the migrations once
            self._migrated = True
        self.execute("empty_tables")
        return self.url

    def execute(self, query: str, params: Params | None = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            cursor = conn.execute(self.Q[query], params)
            return cursor.fetchall() if cursor.description else []

    def facts(self) -> dict[str, str]:
        [(version,)] = self.execute("server_version")
        settings = self.execute("settings", {"names": list(self.SETTINGS)})
        return {"version": str(version), **{str(name): str(value) for name, value in settings}}

    def close(self) -> None:
        self._on_server("drop_database")

    def _on_server(self, query: str) -> None:
        """Run a statement about this target's database over the server's URL."""
        statement = sql.SQL(self.Q[query]).format(name=sql.Identifier(self.database))
        with psycopg.connect(self.server_url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(statement)
