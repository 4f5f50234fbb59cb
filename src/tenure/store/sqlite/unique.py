"""Unique locks on SQLite, taken inside the transaction that needs them.

A task whose lock phase starts at enqueue takes its lock in the creating
transaction, so a refused batch leaves no task behind; one whose phase starts
at execution takes it in the reserving transaction, and a task refused there is
settled by its rule before the reservation commits. (PostgreSQL does the latter
in a trigger; SQLite's triggers cannot report which tasks they refused.)
"""

from __future__ import annotations

import json
import sqlite3

from tenure.store.refusals import unique_conflict, unique_start_error
from tenure.store.sqlite.rows import run_at_of
from tenure.store.sqlite.schema import Q
from tenure.store.types import PreparedTask
from tenure.task import LockPhase


def lock_at_enqueue(
    conn: sqlite3.Connection,
    tasks: list[PreparedTask],
    at: float,
) -> None:
    """Take the lock of every task whose phase starts at enqueue, in the
    creating transaction; ``UniqueConflict`` (naming every refused item)
    undoes the whole batch."""
    conflicts: list[tuple[int, str, str | None]] = []
    for index, task in enumerate(tasks):
        if task.unique is None or not task.locks_at_enqueue:
            continue
        run_at = run_at_of(task, at)
        scheduled = at if run_at is None else run_at
        rule = task.unique
        lock = (rule.key, rule.lock.value)
        if not _take(conn, task.id, lock, scheduled + rule.ttl, at):
            conflicts.append((index, rule.key, _holder(conn, rule.key)))
    if conflicts:
        raise unique_conflict(conflicts)


def lock_at_start(conn: sqlite3.Connection, row: sqlite3.Row, at: float) -> bool:
    """Whether the task just reserved may start: it needs no lock at start,
    or it took it. A refused one is settled by its rule in this transaction."""
    lock = row["unique_lock"]
    if lock not in (LockPhase.WHILE_EXECUTING, LockPhase.UNTIL_EXECUTED):
        return True
    key = row["unique_key"]
    if _take(conn, row["id"], (key, lock), at + row["unique_ttl"], at):
        return True
    error = unique_start_error(_holder(conn, key))
    params = {"id": row["id"], "now": at, "error": json.dumps(error.stored())}
    conn.execute(Q["refuse_unique_start"], params)
    return False


def _take(
    conn: sqlite3.Connection, task_id: str, rule: tuple[str, str], expires_at: float, at: float
) -> bool:
    """Take the lock (key, phase) for ``task_id``; whether it was taken."""
    key, lock = rule
    params = {"key": key, "task_id": task_id, "lock": lock, "expires_at": expires_at}
    return conn.execute(Q["take_unique_locks"], {**params, "now": at}).fetchone() is not None


def _holder(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute(Q["unique_lock_holders"], {"key": key}).fetchone()
    return None if row is None else str(row[0])
