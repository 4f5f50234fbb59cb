"""Tasks read from rows by position: whatever the order, case and extra columns
of a query, the task is the one its columns say; a missing column is an error."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from tenure import Status, TaskError, open_store
from tenure.store import NewTask, validate
from tenure.store.postgres import rows as postgres_rows
from tenure.store.sqlite import rows as sqlite_rows
from tenure.store.sqlite.schema import Q
from tenure.task import LockPhase, OnConflict, UniqueRule


def test_sqlite_rows_are_read_by_name_whatever_the_query_s_columns(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    with open_store(f"sqlite:///{path}") as store:
        created = store.task_create(
            NewTask(topic="t", name="n", data={"args": [1], "kwargs": {}}, tags=frozenset({"x"}))
        )
    connection = sqlite3.connect(path)
    connection.row_factory = sqlite3.Row
    try:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(tenure_tasks)")]
        shuffled = ", ".join(f'{name.upper()} AS "{name.upper()}"' for name in reversed(columns))
        queries = ("SELECT * FROM tenure_tasks", f"SELECT 1 AS extra, {shuffled} FROM tenure_tasks")
        read = [sqlite_rows.task(connection.execute(q).fetchone()) for q in queries]
        assert read[0] == read[1] == created
        assert read[0].tags == frozenset({"x"}) and read[0].status is Status.PENDING
        narrow = connection.execute("SELECT id, status FROM tenure_tasks").fetchone()
        with pytest.raises(IndexError, match="topic"):
            sqlite_rows.task(narrow)
    finally:
        connection.close()


def test_postgres_rows_convert_what_psycopg_does_not() -> None:
    away = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    row = {name: None for name in postgres_rows.TASK_FIELDS} | {
        "id": "a",
        "topic": "t",
        "sub_topic": "default",
        "name": "n",
        "status": "failed",
        "error": {"type": "E", "message": "m", "traceback": "tb"},
        "priority": 0,
        "attempts": 1,
        "max_attempts": 1,
        "tags": [],
        "created_at": away,
        "record_ver": 3,
        "seq": 7,  # columns a task has no field for are left out
    }
    task = postgres_rows.task(row)
    assert task.status is Status.FAILED and task.error == TaskError("E", "m", "tb")
    assert task.tags == frozenset() and task.run_at is None
    assert task.created_at == away and task.created_at.tzinfo is UTC
    assert postgres_rows.task({**row, "tags": ["b", "a"]}).tags == frozenset({"a", "b"})
    with pytest.raises(ValueError, match="sleeping"):
        postgres_rows.task({**row, "status": "sleeping"})


def test_the_sqlite_insert_binds_each_value_to_its_own_column() -> None:
    """insert_task takes its values by position: placeholder ?n of each column
    is the n-th of INSERT_COLUMNS, under the column's own name (``now`` for the
    creation and update times)."""
    statement = " ".join(Q["insert_task"].split())
    columns_part, values_part = statement.split(") VALUES (")
    columns = [c.strip() for c in columns_part.split("(", 1)[1].split(",")]
    values = [v.strip() for v in values_part.rstrip("); ").split(",")][: len(columns)]
    assert columns[-1] == "fair_turn" and values[-1].startswith("-- A fair key's task")
    bound = {
        column: sqlite_rows.INSERT_COLUMNS[int(value[1:]) - 1]
        for column, value in zip(columns, values, strict=True)
        if value.startswith("?")
    }
    times = {"created_at": "now", "updated_at": "now"}
    assert bound == {column: times.get(column, column) for column in bound}
    assert sorted(set(bound.values())) == sorted(sqlite_rows.INSERT_COLUMNS)
    rule = UniqueRule("k", LockPhase.UNTIL_EXECUTED, OnConflict.REJECT, ttl=30.0, retry_in=4.0)
    task = NewTask(
        topic="t",
        name="n",
        id="i",
        data={"args": [1], "kwargs": {}},
        sub_topic="s",
        group_id="g",
        description="d",
        priority=7,
        max_attempts=3,
        tags=frozenset({"x"}),
        timeout=1.5,
        run_at=datetime.fromtimestamp(9.0, UTC),
        unique=rule,
        meta={"k": 'v\t"x'},
        expires=90.0,
        limit_key="account\t7",
        limit_max=2,
        order_key="ledger:7",
        fair_key="fair:acme",
    )
    values = dict(
        zip(
            sqlite_rows.INSERT_COLUMNS,
            sqlite_rows.insert_row(validate.prepare(task, 1 << 20), 5.0),
            strict=True,
        )
    )
    assert values == {
        "id": "i",
        "topic": "t",
        "sub_topic": "s",
        "name": "n",
        "data": '{"args":[1],"kwargs":{}}',
        "group_id": "g",
        "description": "d",
        "priority": 7,
        "max_attempts": 3,
        "tags": '["x"]',
        "timeout": 1.5,
        "run_at": 9.0,
        "now": 5.0,
        "unique_key": "k",
        "unique_lock": "until_executed",
        "unique_on_conflict": "reject",
        "unique_ttl": 30.0,
        "unique_retry_in": 4.0,
        "status": "pending",
        "gate_in": None,
        "gate_out": None,
        "meta": '{"k": "v\\t\\"x"}',
        "expires_at": 95.0,
        "limit_key": "account\t7",
        "limit_max": 2,
        "order_key": "ledger:7",
        "fair_key": "fair:acme",
    }
    assert list(values)[sqlite_rows.RUN_AT] == "run_at"
