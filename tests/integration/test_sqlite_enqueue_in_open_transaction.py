"""A process's first enqueue on its own SQLite transaction must not wait for
that transaction.

The documented way to enqueue inside a transaction on SQLite is ``BEGIN
IMMEDIATE`` on a connection of the caller's, then ``.options(connection=conn)
.enqueue(...)``. The first such enqueue of a process opens the App's store,
which checks the schema. That check used to take the write lock even when every
migration was applied already: it waited for the caller's own transaction, which
holds that lock, until the busy timeout, then failed (and meanwhile every other
writer of the database waited too). Found by the unique-torture chaos scenario,
whose producers roll such transactions back.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import tenure
from tenure.store import open_store

BUSY = 3.0
"""The store's busy timeout in this test: the old behaviour failed after it."""


def test_first_enqueue_on_the_callers_open_transaction(tmp_path: Path) -> None:
    path = tmp_path / "tenure.db"
    url = f"sqlite:///{path}?busy_timeout={BUSY}"
    with open_store(url):
        pass  # the schema is current before the process below opens its store
    app = tenure.App(url)

    @app.task
    def send(order: int) -> int:
        return order

    conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY)
    try:
        conn.execute("BEGIN IMMEDIATE")
        began = time.monotonic()
        handle = send.options(connection=conn).enqueue(7)
        took = time.monotonic() - began
        conn.execute("COMMIT")
    finally:
        conn.close()
        app.close()

    assert took < BUSY / 2, f"the enqueue waited {took:.1f}s for the caller's own lock"
    with open_store(url) as store:
        stored = store.task_get(handle.id)
    assert stored is not None and stored.status is tenure.Status.PENDING
