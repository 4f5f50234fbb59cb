"""Running the PostgreSQL store's statements: fetching rows, splitting batches
into statements, making several statements one transaction, and inserting on
a connection that may be the caller's own.

A batch normally travels as one statement (one round trip). It is split only
when one statement could not do it right: a batch that names a task twice (an
``UPDATE … FROM unnest(…)`` changes a row once, however many items match it),
or one whose payloads would make a single parameter too large for the server
(a field is limited to 1 GB). The parts then run in order inside one
transaction, so the batch behaves as if its items ran one after the other and
is still applied whole or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import psycopg
from psycopg import pq
from psycopg.rows import dict_row

from tenure.errors import DuplicateTask, StoreError, UniqueConflict
from tenure.store.postgres.driver import is_duplicate_id
from tenure.store.postgres.rows import Row
from tenure.store.postgres.schema import Q
from tenure.store.refusals import unique_conflict

Connection = psycopg.Connection[Any]

MAX_STATEMENT_BYTES = 64 << 20
"""Payload bytes (JSON data, results, errors) sent in one statement at most."""


def fetch(conn: Connection, query: str, params: dict[str, Any]) -> list[Row]:
    """Run the named ``query`` on ``conn`` and return its rows as dicts
    (whatever row factory the connection has, if it is a caller's)."""
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(Q[query], params)
        return cur.fetchall()


def split(keys: Sequence[str], sizes: Sequence[int]) -> list[list[int]]:
    """Indices of a batch, cut into consecutive statements: a new one starts
    when its task is in the current one already, or when the current one's
    payload would pass :data:`MAX_STATEMENT_BYTES`."""
    parts: list[list[int]] = []
    keys_in_part: set[str] = set()
    size = 0
    for index, (key, item_size) in enumerate(zip(keys, sizes, strict=True)):
        if not parts or key in keys_in_part or size + item_size > MAX_STATEMENT_BYTES:
            parts.append([])
            keys_in_part, size = set(), 0
        parts[-1].append(index)
        keys_in_part.add(key)
        size += item_size
    return parts


def atomic(conn: Connection, several: bool) -> AbstractContextManager[Any]:
    """Make what runs inside all-or-nothing on ``conn``.

    Inside a transaction already (a caller's): a savepoint, so a refusal
    undoes only our part and leaves the caller's transaction usable. In
    autocommit, one statement is atomic by itself; several need a transaction.
    Outside autocommit, psycopg opens a transaction for the caller to commit.
    """
    in_transaction = conn.info.transaction_status == pq.TransactionStatus.INTRANS
    if in_transaction or (conn.autocommit and several):
        return conn.transaction()
    return nullcontext()


def insert(
    conn: Connection,
    ids: Sequence[str],
    parts: list[dict[str, Any]],
    locking: Sequence[tuple[int, str, str]] = (),
) -> list[Row]:
    """Insert every part of a batch (of the tasks ``ids``), or nothing;
    ``DuplicateTask`` names an id that exists. ``locking`` holds (index, task
    id, lock key) of the tasks that take their unique lock at enqueue, in the
    same transaction; ``UniqueConflict`` names every one whose lock is held.

    If the caller's connection had no transaction open yet (and no autocommit),
    the one the insert began holds nothing of theirs: after a refusal it is
    rolled back, leaving the connection as it was found.
    """
    began = conn.info.transaction_status == pq.TransactionStatus.IDLE and not conn.autocommit
    try:
        with atomic(conn, len(parts) > 1 or bool(locking)):
            inserted = [row for part in parts for row in fetch(conn, "insert_task", part)]
            take_unique_locks(conn, locking)
            return inserted
    except UniqueConflict:
        if began:
            conn.rollback()
        raise
    except psycopg.Error as exc:
        if began:
            conn.rollback()
        if not is_duplicate_id(exc):
            raise
    existing = {row["id"] for row in fetch(conn, "existing_ids", {"ids": list(ids)})}
    if began:
        conn.rollback()
    raise DuplicateTask(next((i for i in ids if i in existing), ids[0]))


def take_unique_locks(conn: Connection, locking: Sequence[tuple[int, str, str]]) -> None:
    """Take the unique locks of ``locking`` (index, task id, key) or raise the
    ``UniqueConflict`` that names each one held by another task."""
    if not locking:
        return
    ids = [task_id for _, task_id, _ in locking]
    taken = {row["key"] for row in fetch(conn, "take_unique_locks", {"ids": ids})}
    refused = [(index, key) for index, _, key in locking if key not in taken]
    if not refused:
        return
    keys = [key for _, key in refused]
    holders = {
        row["key"]: row["task_id"] for row in fetch(conn, "unique_lock_holders", {"keys": keys})
    }
    raise unique_conflict([(index, key, holders.get(key)) for index, key in refused])


def callers(connection: object) -> Connection:
    """The caller's connection, if it is one this store can write on."""
    if not isinstance(connection, psycopg.Connection):
        raise StoreError(f"connection must be a psycopg.Connection, not {type(connection)}")
    return connection
