"""Connection faults against a real server: sessions of the store's pool are
killed with ``pg_terminate_backend``. The pool replaces them, an interrupted
operation raises a tenure error, and its write is never half-applied."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import psycopg
import pytest

from tenure import Lease, Status, StoreUnavailable
from tenure.store import Completion, NewTask, ReserveParams
from tenure.store.postgres.backend import PostgresStore
from tests.conftest import _empty_postgres

ROLE = "faults"
APP = f"tenure-{ROLE}"

Conn = psycopg.Connection[tuple[Any, ...]]


@pytest.fixture
def url(postgres_url: str) -> str:
    _empty_postgres(postgres_url)
    return postgres_url


@pytest.fixture
def store(url: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(url, role=ROLE, pool_min=2, pool_max=4)
    yield opened
    opened.close()


@pytest.fixture
def admin(url: str) -> Iterator[Conn]:
    with psycopg.connect(url, autocommit=True) as conn:
        yield conn


@pytest.fixture
def blocker(url: str) -> Iterator[Conn]:
    """Another application's transaction, holding locks the store will wait for."""
    with psycopg.connect(url) as conn:
        yield conn
        conn.rollback()


def sessions(admin: Conn) -> set[int]:
    rows = admin.execute(
        "SELECT pid FROM pg_stat_activity"
        " WHERE datname = current_database() AND application_name = %s",
        [APP],
    ).fetchall()
    return {pid for (pid,) in rows}


def terminate(admin: Conn, pids: set[int]) -> None:
    """Kill the sessions and wait (up to 5 s each) until they are gone."""
    for pid in pids:
        admin.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])


def waiting_on_a_lock(admin: Conn, timeout: float = 30.0) -> int:
    """The pid of the store's session once it waits on a row lock.

    Asks the server again and again until then; each question is a round trip,
    so this waits for the condition itself rather than for a guessed delay.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name = %s AND wait_event_type = 'Lock'",
            [APP],
        ).fetchone()
        if row is not None:
            return int(row[0])
    raise AssertionError("the store's statement never waited on the lock")


def interrupt(admin: Conn, call: Callable[[], object]) -> Future[object]:
    """Run ``call`` in a thread until it blocks on a lock, then kill its session."""
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(call)
        terminate(admin, {waiting_on_a_lock(admin)})
        future.exception(timeout=30)
    return future


def new(task_id: str) -> NewTask:
    return NewTask(topic="t", name="n", id=task_id)


def test_next_operation_succeeds_after_the_server_drops_every_session(
    store: PostgresStore, admin: Conn
) -> None:
    store.task_create(new("before"))
    killed = sessions(admin)
    assert killed, "the pool holds no session to kill"
    terminate(admin, killed)
    after = store.task_create(new("after"))
    assert store.task_get("after") == after
    assert sessions(admin).isdisjoint(killed), "a dead session was reused"


def test_interrupted_batch_create_writes_nothing(
    store: PostgresStore, admin: Conn, blocker: Conn
) -> None:
    # The other transaction's uncommitted row makes the store's insert wait on
    # the unique index, in the middle of its batch.
    store.task_create(new("contested"), connection=blocker)
    future = interrupt(
        admin, lambda: store.task_create_many([new(i) for i in ("a", "contested", "b")])
    )
    assert isinstance(future.exception(), StoreUnavailable)
    blocker.rollback()
    assert [store.task_get(i) for i in ("a", "contested", "b")] == [None, None, None]
    assert store.event_list() == []
    created = store.task_create_many([new(i) for i in ("a", "contested", "b")])
    assert [t.id for t in created] == ["a", "contested", "b"]


def test_interrupted_batch_complete_changes_nothing(
    store: PostgresStore, admin: Conn, blocker: Conn
) -> None:
    store.task_create_many([new(i) for i in ("x", "y", "z")])
    running = store.task_reserve(ReserveParams(owner="w", limit=3))
    leases = [Lease(t.id, "w", t.lease_token or 0) for t in running]
    before = store.event_list()
    blocker.execute("SELECT 1 FROM tenure.tasks WHERE id = 'z' FOR UPDATE")
    completions = [Completion(lease, "done") for lease in leases]
    future = interrupt(admin, lambda: store.task_complete_many(completions))
    assert isinstance(future.exception(), StoreUnavailable)
    blocker.rollback()
    assert [store.task_get(t.id) for t in running] == running  # not one of them completed
    assert store.event_list() == before
    outcomes = store.task_complete_many(completions)
    assert [getattr(o, "status", None) for o in outcomes] == [Status.DONE] * 3


def test_interrupted_reserve_leases_nothing(
    store: PostgresStore, admin: Conn, blocker: Conn
) -> None:
    store.task_create(new("only"))
    # A held ACCESS EXCLUSIVE lock stops even SKIP LOCKED from reading the table.
    blocker.execute("LOCK TABLE tenure.tasks IN ACCESS EXCLUSIVE MODE")
    future = interrupt(admin, lambda: store.task_reserve(ReserveParams(owner="w")))
    assert isinstance(future.exception(), StoreUnavailable)
    blocker.rollback()
    task = store.task_get("only")
    assert task is not None and task.status is Status.PENDING and task.record_ver == 1
    assert [t.id for t in store.task_reserve(ReserveParams(owner="w"))] == ["only"]


def test_unreachable_server_is_store_unavailable() -> None:
    with pytest.raises(StoreUnavailable):
        PostgresStore("postgresql://postgres@127.0.0.1:1/none?connect_timeout=1", pool_timeout=0.2)
