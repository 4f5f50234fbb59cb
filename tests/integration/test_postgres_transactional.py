"""Transactional enqueue on PostgreSQL: tasks written on the caller's own
connection exist if and only if the caller commits, and a refused batch leaves
the caller's transaction usable."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tenure import DuplicateTask, Store, StoreError
from tenure.store import NewTask
from tenure.store.postgres.backend import PostgresStore


@pytest.fixture
def store(postgres_store: Store) -> Store:
    return postgres_store


@pytest.fixture
def caller(postgres_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """The application's own connection, in psycopg's default transaction mode."""
    with psycopg.connect(postgres_url) as conn:
        yield conn


def new(task_id: str) -> NewTask:
    return NewTask(topic="t", name="n", id=task_id)


def test_task_exists_once_the_caller_commits(
    store: PostgresStore, caller: psycopg.Connection[tuple[object, ...]]
) -> None:
    caller.execute("CREATE TEMP TABLE orders (id int)")
    caller.execute("INSERT INTO orders VALUES (1)")
    created = store.task_create(new("with-order"), connection=caller)
    assert store.task_get("with-order") is None  # not visible before the commit
    caller.commit()
    assert store.task_get("with-order") == created


def test_task_vanishes_when_the_caller_rolls_back(
    store: PostgresStore, caller: psycopg.Connection[tuple[object, ...]]
) -> None:
    store.task_create_many([new("a"), new("b")], connection=caller)
    caller.rollback()
    assert store.task_get("a") is None and store.task_get("b") is None
    assert store.event_list() == []


def test_explicit_transaction_block_decides(
    store: PostgresStore, caller: psycopg.Connection[tuple[object, ...]]
) -> None:
    caller.autocommit = True

    def enqueue_then_fail() -> None:
        with caller.transaction():
            store.task_create(new("doomed"), connection=caller)
            raise RuntimeError("the application's work failed")

    with pytest.raises(RuntimeError):
        enqueue_then_fail()
    assert store.task_get("doomed") is None
    with caller.transaction():
        store.task_create(new("kept"), connection=caller)
    assert store.task_get("kept") is not None


def test_duplicate_leaves_the_callers_transaction_usable(
    store: PostgresStore, caller: psycopg.Connection[tuple[object, ...]]
) -> None:
    store.task_create(new("taken"))
    caller.execute("CREATE TEMP TABLE orders (id int)")
    caller.execute("INSERT INTO orders VALUES (1)")
    with pytest.raises(DuplicateTask) as raised:
        store.task_create_many([new("fresh"), new("taken")], connection=caller)
    assert raised.value.task_id == "taken"
    # The caller's own earlier work is intact and its transaction still usable.
    assert caller.execute("SELECT count(*) FROM orders").fetchone() == (1,)
    store.task_create(new("after"), connection=caller)
    caller.commit()
    assert store.task_get("fresh") is None
    assert store.task_get("after") is not None


def test_duplicate_of_a_task_in_the_callers_own_transaction(
    store: PostgresStore, caller: psycopg.Connection[tuple[object, ...]]
) -> None:
    store.task_create(new("mine"), connection=caller)
    with pytest.raises(DuplicateTask) as raised:
        store.task_create(new("mine"), connection=caller)
    assert raised.value.task_id == "mine"
    caller.commit()
    assert store.task_get("mine") is not None


def test_refusal_on_an_idle_connection_leaves_no_transaction_open(
    store: PostgresStore, caller: psycopg.Connection[tuple[object, ...]]
) -> None:
    store.task_create(new("taken"))
    with pytest.raises(DuplicateTask):
        store.task_create(new("taken"), connection=caller)
    assert caller.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_foreign_connection_object_is_refused(store: PostgresStore) -> None:
    with pytest.raises(StoreError):
        store.task_create(new("x"), connection=object())
