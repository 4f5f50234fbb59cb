"""Concurrent enqueues of one process share a commit, on every store.

The store's write lock is held from outside (a second connection, as another
process would hold it), so the first caller's write waits on the database for
certain; the callers arriving meanwhile queue, and the test waits until they
have. Then the lock goes and the queued callers are written in one transaction:
they share one creation time, the transaction's clock.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

import psycopg
import pytest

from tenure import DuplicateTask, Store
from tenure.store import TaskFilter
from tenure.task import Task
from tests.conformance.support import new

FOLLOWERS = 6


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
        pg.execute("LOCK TABLE tasks IN EXCLUSIVE MODE")
        yield


def followers_queued(
    store: Store, store_url: str, follower_ids: list[list[str]]
) -> list[Future[list[Task]]]:
    """A first creation held up by the lock, then ``follower_ids``' creations
    queued behind it; every future (the first one's first)."""
    with ThreadPoolExecutor(FOLLOWERS + 1) as pool, write_lock_held(store_url):
        first = pool.submit(store.task_create_many, [new(id="first")])
        deadline = time.monotonic() + 10
        while not store._grouped._writing:
            assert time.monotonic() < deadline, "the first creation never began"
            time.sleep(0.001)
        rest = [
            pool.submit(store.task_create_many, [new(id=i) for i in ids]) for ids in follower_ids
        ]
        while len(store._grouped._queue) < len(rest):
            assert time.monotonic() < deadline, "the creations never queued"
            time.sleep(0.001)
    return [first, *rest]


def test_creations_queued_behind_a_write_share_one_commit(store: Store, store_url: str) -> None:
    ids = [[f"f{n}-a", f"f{n}-b"] for n in range(FOLLOWERS)]
    futures = followers_queued(store, store_url, ids)
    created = [future.result(30) for future in futures]
    assert [[t.id for t in batch] for batch in created[1:]] == ids
    listed = store.task_list(TaskFilter(), limit=100).tasks  # in creation order
    stored = {t.id: t for t in listed}
    order = [t.id for t in listed]
    assert len(stored) == 1 + 2 * FOLLOWERS
    times = {stored[task_id].created_at for batch in ids for task_id in batch}
    assert len(times) == 1, "the queued creations were not written in one transaction"
    assert all(t == stored[t.id] for batch in created for t in batch)
    for batch in ids:  # each caller's tasks in its own order
        assert order.index(batch[0]) < order.index(batch[1])


def test_a_duplicate_among_queued_creations_refuses_only_its_caller(
    store: Store, store_url: str
) -> None:
    store.task_create(new(id="taken"))
    futures = followers_queued(store, store_url, [["a"], ["taken"], ["b"]])
    assert [t.id for t in futures[0].result(30)] == ["first"]
    assert [t.id for t in futures[1].result(30)] == ["a"]
    with pytest.raises(DuplicateTask):
        futures[2].result(30)
    assert [t.id for t in futures[3].result(30)] == ["b"]
    stored = sorted(t.id for t in store.task_list(TaskFilter(), limit=100).tasks)
    assert stored == ["a", "b", "first", "taken"]
