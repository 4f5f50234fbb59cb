"""``App.enqueue_connection``: where a framework says which open transaction an
enqueue without ``connection=`` joins; an explicit ``connection=`` still wins,
and ``None`` from it means the store's own connection."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import tenure
from tenure import Status


def test_an_enqueue_joins_the_transaction_the_app_names(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    app = tenure.App(f"sqlite:///{path}")

    @app.task
    def job(n: int) -> int:
        return n

    assert app.store  # the schema exists before the caller's transaction
    caller = sqlite3.connect(path, isolation_level=None)
    current: list[sqlite3.Connection | None] = [caller]
    app.enqueue_connection = lambda: current[0]
    try:
        caller.execute("BEGIN IMMEDIATE")
        rolled_back = job.enqueue(1)
        caller.execute("ROLLBACK")
        caller.execute("BEGIN IMMEDIATE")
        committed = job.enqueue(2)
        caller.execute("COMMIT")
        current[0] = None  # outside a transaction: the store's own connection
        own = job.enqueue(3)
        assert app.store.task_get(rolled_back.id) is None
        assert [app.store.task_get(h.id) is not None for h in (committed, own)] == [True, True]
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        current[0] = caller  # an explicit connection wins over the App's
        explicit = job.options(connection=other).enqueue(4)
        other.execute("ROLLBACK")
        other.close()
        assert app.store.task_get(explicit.id) is None
        assert app.tasks.count(status=Status.PENDING) == 2
    finally:
        caller.close()
        app.close()
