"""Batches on PostgreSQL that one statement cannot carry: a batch naming a task
twice, and a batch too large for one statement. Each must behave as if its
items ran one after the other (as on SQLite), and apply whole or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenure import DuplicateTask, Lease, Status, Store, TaskError
from tenure.store import Completion, Failure, NewTask, ReserveParams, StateOutcome
from tenure.store.postgres import statements
from tenure.store.postgres.backend import PostgresStore
from tenure.store.sqlite.backend import SQLiteStore

ERROR = TaskError("E", "boom")


@pytest.fixture
def store(postgres_store: Store) -> Store:
    return postgres_store


@pytest.fixture
def tiny_statements(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every payload passes the per-statement budget: one statement per item."""
    monkeypatch.setattr(statements, "MAX_STATEMENT_BYTES", 1)


def running(store: Store, count: int) -> list[Lease]:
    store.task_create_many([NewTask(topic="t", name="n", max_attempts=3) for _ in range(count)])
    tasks = store.task_reserve(ReserveParams(owner="w", limit=count))
    return [Lease(t.id, "w", t.lease_token or 0) for t in tasks]


def shape(outcomes: list[StateOutcome]) -> list[tuple[str, object]]:
    """What an outcome says, without ids and times: its type and status or version."""
    return [
        (type(o).__name__, getattr(o, "record_ver", None) or getattr(o, "status", None))
        for o in outcomes
    ]


def mixed_batch(store: Store) -> list[list[StateOutcome]]:
    a, b, c = running(store, 3)
    return [
        store.lease_extend_many([a, b, a, a], 30),
        store.task_complete_many([Completion(a, 1), Completion(a, 2), Completion(b, 3)]),
        store.task_fail_many([Failure(c, ERROR, retry_in=0), Failure(c, ERROR)]),
    ]


def test_a_task_named_twice_behaves_as_on_sqlite(store: PostgresStore, tmp_path: Path) -> None:
    sqlite = SQLiteStore(tmp_path / "reference.db")
    try:
        expected = [shape(outcomes) for outcomes in mixed_batch(sqlite)]
    finally:
        sqlite.close()
    assert [shape(outcomes) for outcomes in mixed_batch(store)] == expected


def test_extending_one_lease_twice_extends_it_twice(store: PostgresStore) -> None:
    [lease] = running(store, 1)
    before = store.task_get(lease.task_id)
    assert before is not None
    first, second = store.lease_extend_many([lease, lease], 30)
    assert getattr(first, "record_ver", None) == before.record_ver + 1
    assert getattr(second, "record_ver", None) == before.record_ver + 2


@pytest.mark.usefixtures("tiny_statements")
def test_create_cut_into_statements_is_still_all_or_nothing(store: PostgresStore) -> None:
    store.task_create(NewTask(topic="t", name="n", id="taken"))
    ids = ["a", "b", "c", "taken", "d"]
    with pytest.raises(DuplicateTask) as raised:
        store.task_create_many([NewTask(topic="t", name="n", id=i) for i in ids])
    assert raised.value.task_id == "taken"
    assert [store.task_get(i) for i in ("a", "b", "c", "d")] == [None] * 4
    created = store.task_create_many([NewTask(topic="t", name="n", data=i) for i in range(5)])
    assert [t.data for t in created] == list(range(5))


@pytest.mark.usefixtures("tiny_statements")
def test_holder_writes_cut_into_statements_report_each_item(store: PostgresStore) -> None:
    leases = running(store, 4)
    stale = Lease(leases[0].task_id, "w", leases[0].token - 1)
    outcomes = store.task_complete_many(
        [Completion(lease, i) for i, lease in enumerate(leases)] + [Completion(stale, "x")]
    )
    assert all(getattr(o, "status", None) is Status.DONE for o in outcomes[:4])
    stored = [store.task_get(lease.task_id) for lease in leases]
    assert [getattr(t, "result", None) for t in stored] == [0, 1, 2, 3]
    assert type(outcomes[4]).__name__ == "LeaseLost"
