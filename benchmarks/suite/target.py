"""A store under measurement, in a place of its own that is removed afterwards.

A :class:`Target` hands out the URL of an empty, migrated store for each
measurement (:meth:`Target.fresh`) and runs the benchmark's own SQL (bulk
loads, the database's limit) beside the store, never through it. The two
kinds are in ``sqlite_target`` and ``postgres_target``.
"""

from __future__ import annotations

import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from benchmarks.suite.app import NAME, TOPIC

Params = Mapping[str, Any]

LOADER = "bench-loader"
"""The assignee of the finished tasks loaded as history."""


class Target(ABC):
    """One store of this machine, as the benchmark uses it."""

    name: str
    url: str

    @abstractmethod
    def fresh(self) -> str:
        """The URL of an empty store with the current schema."""

    @abstractmethod
    def execute(self, query: str, params: Params | None = None) -> list[tuple[Any, ...]]:
        """Run the benchmark's named ``query`` on the current store's database."""

    @abstractmethod
    def facts(self) -> dict[str, str]:
        """Version and settings that explain its numbers."""

    @abstractmethod
    def close(self) -> None:
        """Remove everything the target created."""

    def load_finished(self, count: int) -> None:
        """Add ``count`` done tasks to the current store in one statement, then let
        the database settle as it would have while that history accumulated."""
        params = {
            "count": count,
            "prefix": f"history-{uuid.uuid4().hex[:8]}-",
            "topic": TOPIC,
            "name": NAME,
            "owner": LOADER,
            "now": time.time(),
        }
        self.execute("load_finished", params)
        self.execute("settle")

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
