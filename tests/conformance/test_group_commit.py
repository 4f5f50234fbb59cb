"""Concurrent enqueues of one process share a commit, on every store.

The store's write lock is held from outside (a second connection, as another
process would hold it), so the first caller's write waits on the database for
certain; the callers arriving meanwhile queue, and the test waits until they
have. Then the lock goes and the queued callers are written in one transaction:
they share one creation time, the transaction's clock.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

import psycopg

from tenure import App, Store
from tenure.store import TaskFilter
from tenure.task import Task
from tests.conformance.support import new
from tests.integration.workers import wait_for

FOLLOWERS = 6
T = TypeVar("T")


@contextmanager
def write_lock_held(store_url: str) -> Iterator[None]:
    """Hold, from a connection of its own, the lock a creation must wait for."""
    if store_url.startswith("sqlite"):
        conn = sqlite3.connect(store_url.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("COMMIT")
            conn.close()
        return
    with psycopg.connect(store_url) as pg, pg.transaction():
        pg.execute("LOCK TABLE tenure.tasks IN EXCLUSIVE MODE")  # tenure's, not the app's
        yield


def followers_queued(
    store: Store, store_url: str, create: Callable[[list[str]], T]
) -> list[Future[T]]:
    """A first creation held up by the lock, then the followers' creations
    (two tasks each, by ``create``, given their names) queued behind it; every
    future (the first one's first)."""
    grouped = store._grouped
    with ThreadPoolExecutor(FOLLOWERS + 1) as pool, write_lock_held(store_url):
        first = pool.submit(create, ["first"])
        wait_for(lambda: grouped._writing and not grouped._queue, "the first creation to begin")
        rest = [pool.submit(create, [f"f{n}-a", f"f{n}-b"]) for n in range(FOLLOWERS)]
        wait_for(lambda: len(grouped._queue) == FOLLOWERS, "the creations to queue")
    return [first, *rest]


def test_creations_queued_behind_a_write_share_one_commit(store: Store, store_url: str) -> None:
    def create(names: list[str]) -> list[Task]:
        return store.task_create_many([new(name=name) for name in names])

    created = [future.result(30) for future in followers_queued(store, store_url, create)]
    assert [[t.name for t in batch] for batch in created[1:]] == [
        [f"f{n}-a", f"f{n}-b"] for n in range(FOLLOWERS)
    ]
    listed = store.task_list(TaskFilter(), limit=100).tasks  # in creation order
    assert sorted(t.id for t in listed) == sorted(t.id for batch in created for t in batch)
    stored = {t.id: t for t in listed}
    assert all(t == stored[t.id] for batch in created for t in batch)
    times = {t.created_at for batch in created[1:] for t in batch}
    assert len(times) == 1, "the queued creations were not written in one transaction"
    order = [t.id for t in listed]
    for a, b in created[1:]:  # each caller's tasks in its own order
        assert order.index(a.id) < order.index(b.id)


def test_enqueues_of_task_functions_share_one_commit(store_url: str) -> None:
    """The App's enqueues (whose ids tenure chooses before the store sees them)
    share commits as the store's own creations do."""
    app = App(store_url)
    noop = app.task(name="noop")(lambda: None)

    def create(names: list[str]) -> list[Task]:
        handles = noop.enqueue_many([()] * len(names))
        return [handle.task for handle in handles if handle.task is not None]

    try:
        created = [f.result(30) for f in followers_queued(app.store, store_url, create)]
    finally:
        app.close()
    assert [len(batch) for batch in created] == [1] + [2] * FOLLOWERS
    assert len({t.created_at for batch in created[1:] for t in batch}) == 1
