"""SQLite-only behaviour: the caller's transaction, settings, and lifecycle."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from tenure import ConfigError, DuplicateTask, StoreError
from tenure.store import NewTask
from tenure.store.sqlite.backend import SQLiteStore


def new(task_id: str) -> NewTask:
    return NewTask(topic="t", name="n", id=task_id)


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    return SQLiteStore(tmp_path / "s.db")


def test_create_in_the_callers_transaction_commits_with_it(store: SQLiteStore) -> None:
    caller = sqlite3.connect(store.path, isolation_level=None)
    caller.execute("BEGIN IMMEDIATE")
    store.task_create(new("a"), connection=caller)
    assert store.task_get("a") is None  # not visible before the caller commits
    caller.execute("COMMIT")
    assert store.task_get("a") is not None


def test_create_in_the_callers_transaction_rolls_back_with_it(store: SQLiteStore) -> None:
    caller = sqlite3.connect(store.path, isolation_level=None)
    caller.execute("BEGIN IMMEDIATE")
    store.task_create(new("a"), connection=caller)
    caller.execute("ROLLBACK")
    assert store.task_get("a") is None
    assert store.event_list() == []


def test_refused_batch_leaves_nothing_in_the_callers_transaction(store: SQLiteStore) -> None:
    store.task_create(new("taken"))
    caller = sqlite3.connect(store.path, isolation_level=None)
    caller.execute("BEGIN IMMEDIATE")
    with pytest.raises(DuplicateTask) as raised:
        store.task_create_many([new("b1"), new("taken")], connection=caller)
    assert raised.value.task_id == "taken"
    caller.execute("COMMIT")  # the caller carries on and commits its other work
    assert store.task_get("b1") is None


def test_duplicate_seen_only_by_the_callers_transaction_is_named(store: SQLiteStore) -> None:
    caller = sqlite3.connect(store.path, isolation_level=None)
    caller.execute("BEGIN IMMEDIATE")
    store.task_create(new("x"), connection=caller)
    with pytest.raises(DuplicateTask) as raised:
        store.task_create_many([new("y"), new("x")], connection=caller)
    assert raised.value.task_id == "x"
    caller.execute("ROLLBACK")


@pytest.mark.parametrize(
    "options",
    [
        {"busy_timeout": float("inf")},
        {"busy_timeout": float("nan")},
        {"busy_timeout": -1},
        {"synchronous": "off"},
    ],
)
def test_bad_settings_are_config_errors(tmp_path: Path, options: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        SQLiteStore(tmp_path / "x.db", **options)  # type: ignore[arg-type]


def test_in_memory_store_is_private_shared_by_threads_and_gone_on_close() -> None:
    first, second = SQLiteStore(":memory:"), SQLiteStore(":memory:")
    created = first.task_create(NewTask(topic="t", name="n"))
    seen: list[object] = []
    thread = threading.Thread(target=lambda: seen.append(first.task_get(created.id)))
    thread.start()
    thread.join()
    assert seen == [created]
    assert second.task_get(created.id) is None
    directory = Path(first.path).parent
    first.close()
    second.close()
    assert not directory.exists()


def test_unopenable_path_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        SQLiteStore(tmp_path / "missing-dir" / "x.db")


def test_connections_of_finished_threads_are_not_kept(store: SQLiteStore) -> None:
    def touch() -> None:
        store.task_get("nothing")

    for _ in range(20):
        thread = threading.Thread(target=touch)
        thread.start()
        thread.join()
    import gc

    gc.collect()
    assert len(store._connections) <= 2  # the main thread's, plus at most one in flight


def test_a_write_whose_commit_fails_is_rolled_back(store: SQLiteStore) -> None:
    # A deferred foreign key is checked by COMMIT, which then fails and leaves
    # the transaction open: the store rolls it back, so the thread's next
    # write can begin (before, it failed: a transaction within a transaction).
    with store._use() as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        conn.execute(
            "CREATE TABLE child (parent INTEGER REFERENCES parent (id) "
            "DEFERRABLE INITIALLY DEFERRED)"
        )
    with pytest.raises(StoreError, match="FOREIGN KEY"), store._write() as conn:
        conn.execute("INSERT INTO child VALUES (1)")
    with store._use() as conn:
        assert not conn.in_transaction
        assert conn.execute("SELECT count(*) FROM child").fetchone()[0] == 0
    store.task_create(new("a"))
    assert store.task_get("a") is not None
