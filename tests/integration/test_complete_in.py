"""Finishing in the task's own transaction (``tenure.current().complete_in``),
with real ``tenure worker`` processes on each store: the task's row and its
ending commit together; a lease revoked before the ending is written raises
``LeaseLost`` there and rolls both back (the retry books the row once); a
transaction rolled back after the ending was written leaves the task running,
so the attempt fails (``NotCommitted``) and is retried."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tenure import InvalidInput, Lease, Status, Store, Task
from tenure.store import ReserveParams
from tests.apps import own_transaction
from tests.integration.workers import (
    WorkerProcess,
    enqueue,
    finished,
    wait_for,
    wait_until,
)

pytestmark = pytest.mark.slow

APP = "tests.apps.own_transaction:app"


def ledger(url: str, create: bool = False) -> list[tuple[str, int]]:
    """The rows the tasks booked (the table made first, if ``create``)."""
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            if create:
                conn.execute("CREATE TABLE ledger (label TEXT, attempt INTEGER)")
            return conn.execute("SELECT label, attempt FROM ledger ORDER BY label").fetchall()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        if create:
            conn.execute("DROP TABLE IF EXISTS public.ledger")
            conn.execute("CREATE TABLE public.ledger (label text, attempt integer)")
        query = "SELECT label, attempt FROM ledger ORDER BY label"
        found: list[Any] = conn.execute(query).fetchall()
        return [tuple(row) for row in found]


@pytest.fixture
def booked(store: Store, store_url: str) -> str:
    """The store's URL, with its ledger table made."""
    ledger(store_url, create=True)
    return store_url


@pytest.mark.parametrize("pool", ["threads", "async"])
def test_the_row_and_the_ending_commit_together(
    store: Store, booked: str, workers: list[WorkerProcess], pool: str, tmp_path: Path
) -> None:
    workers.append(WorkerProcess(booked, "--pool", pool, app=APP))
    task = wait_until(store, book(store, "a", "commit", tmp_path).id, finished)
    assert (task.status, task.attempts) == (Status.DONE, 1)
    assert task.result == {"label": "a", "attempt": 1}  # complete_in's, not the return value
    assert ledger(booked) == [("a", 1)]


def test_a_lease_revoked_before_the_ending_rolls_the_row_back(
    store: Store, booked: str, workers: list[WorkerProcess], tmp_path: Path
) -> None:
    workers.append(WorkerProcess(booked, app=APP))
    task = book(store, "b", "held", tmp_path)
    wait_for((tmp_path / "started").exists, "the first attempt's start")
    revoke(store, task)
    # The retry (attempt 2) books its row and ends the task meanwhile.
    done = wait_until(store, task.id, lambda t: t.status is Status.DONE)
    assert done.result == {"label": "b", "attempt": 2}
    (tmp_path / "go").touch()  # the first attempt writes now: refused, and rolled back
    refused = wait_for(lambda: _read(tmp_path / "refused-1"), "the first attempt's refusal")
    assert refused == "LeaseLost"
    assert ledger(booked) == [("b", 2)]
    assert store.task_get(task.id) == done


def test_a_transaction_rolled_back_after_the_ending_fails_the_attempt(
    store: Store, booked: str, workers: list[WorkerProcess], tmp_path: Path
) -> None:
    worker = WorkerProcess(booked, app=APP)
    workers.append(worker)
    task = wait_until(store, book(store, "c", "rollback", tmp_path).id, finished)
    assert (task.status, task.attempts) == (Status.DONE, 2)
    assert task.result == {"label": "c", "attempt": 2}
    assert ledger(booked) == [("c", 2)]
    worker.wait_for_log("NotCommitted")


def test_an_ending_outside_a_transaction_is_refused(store: Store, store_url: str) -> None:
    """On a connection with no transaction open the ending would commit on its
    own, apart from the work: refused, and the task still runs."""
    task = book(store, "d", "commit", Path("."))
    [held] = store.task_reserve(ReserveParams(owner="w"))
    lease = Lease(held.id, "w", held.lease_token or 0)
    if store_url.startswith("sqlite"):
        conn: Any = sqlite3.connect(store_url.removeprefix("sqlite:///"), isolation_level=None)
    else:
        import psycopg

        conn = psycopg.connect(store_url, autocommit=True)
    try:
        with pytest.raises(InvalidInput, match="connection: has no transaction open"):
            store.task_complete(lease, 1, connection=conn)
    finally:
        conn.close()
    running = store.task_get(task.id)
    assert running is not None and running.status is Status.RUNNING


def _read(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


def book(store: Store, label: str, first: str, folder: Path) -> Task:
    return enqueue(store, own_transaction.books, label, first, str(folder))


def revoke(store: Store, task: Task) -> None:
    """Revoke the running task's lease (again if a keepalive moved it meanwhile)."""
    for _ in range(10):
        running = store.task_get(task.id)
        assert running is not None and running.status is Status.RUNNING
        if store.task_revoke(running.id, running.record_ver) is not None:
            return
    raise AssertionError("the lease could not be revoked")
