"""Bulk enqueue on PostgreSQL through ``COPY … FROM STDIN``.

A large batch sent as one JSON array costs the server a ``json_to_recordset``
parse of every row before the insert proper; ``COPY`` streams the rows in the
table's own format and inserts them with the least work the server has. The
statement triggers still see every new row (``COPY FROM`` fires ``AFTER
INSERT`` triggers with their transition table), so the event log, the tallies
and the wake-ups are written exactly as for any other insert.

``COPY`` computes nothing and returns nothing, so a batch takes this path only
when every value is known before it is sent: the creation time is the
transaction's ``now()`` (read in the same transaction, before the rows go, or
the caller's explicit ``now``), and a task whose run time is a delay from that
clock (``delay`` without ``run_at``) sends the batch down the ordinary path,
which computes it on the server. Small batches, whose fixed cost (a
transaction and two more round trips) would outweigh the saving, and async
connections also take the ordinary path.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg.rows import tuple_row

from tenure.store.postgres import rows, statements
from tenure.store.postgres.arrays import TextArray
from tenure.store.postgres.schema import Q
from tenure.store.postgres.statements import Connection
from tenure.store.types import PreparedTask
from tenure.task import Task

COPY_MIN_TASKS = 100
"""Batches smaller than this take the ordinary insert (see the module's docstring)."""


def copyable(tasks: Sequence[PreparedTask]) -> bool:
    """Whether ``tasks`` can be written by ``COPY``: a large batch none of
    whose run times the server must compute."""
    if len(tasks) < COPY_MIN_TASKS:
        return False
    return all(task.run_at is not None or task.delay <= 0 for task in tasks)


def copy_insert(
    conn: Connection, tasks: Sequence[PreparedTask], now: datetime | None
) -> list[Task]:
    """Create ``tasks`` on ``conn`` as :func:`statements.insert` does (the same
    transaction handling, unique locks and refusals), their rows sent by ``COPY``."""
    locking = [
        (index, task.id, task.unique.key)
        for index, task in enumerate(tasks)
        if task.unique is not None and task.locks_at_enqueue
    ]

    def write() -> list[Task]:
        created = copy_rows(conn, tasks, now)
        statements.run(conn, statements.take_unique_locks(locking))
        return created

    return statements.guarded(conn, [task.id for task in tasks], True, write)


def copy_rows(conn: Connection, tasks: Sequence[PreparedTask], now: datetime | None) -> list[Task]:
    """Write ``tasks`` on ``conn`` with one ``COPY``, inside the transaction the
    caller holds open; the tasks as created.

    Those are made while the server inserts the rows already sent: the client
    sends rows far faster than the server inserts them, and leaving the
    ``copy`` block sends the last ones and then waits for the server to finish
    them and run the statement triggers."""
    if now is None:
        with conn.cursor(row_factory=tuple_row) as cur:  # whatever the caller's factory
            cur.execute(Q["transaction_now"])
            found = cur.fetchone()
            assert found is not None  # SELECT now() returns one row
            now = found[0]
    at = rows.moment({"now": now}, "now")
    with conn.cursor() as cur, cur.copy(Q["copy_tasks"]) as copy:
        for task in tasks:
            copy.write_row(copy_row(task, at))
        return [rows.created(task, {"created_at": at, "run_at": task.run_at}) for task in tasks]


def copy_row(task: PreparedTask, at: datetime) -> tuple[Any, ...]:
    """A task's row, in the column order of ``copy_tasks``."""
    rule = task.unique
    return (
        task.id,
        task.topic,
        task.sub_topic,
        task.name,
        "pending",
        task.data_json,
        task.group_id,
        task.description,
        task.priority,
        task.max_attempts,
        TextArray(task.tags),
        task.timeout,
        task.run_at,
        at,
        at,
        *(
            (None, None, None, None, None)
            if rule is None
            else (rule.key, rule.lock.value, rule.on_conflict.value, rule.ttl, rule.retry_in)
        ),
    )
