"""Running the PostgreSQL store's statements: fetching rows, splitting batches
into statements, making several statements one transaction, and inserting on
a connection that may be the caller's own, sync or async.

A batch normally travels as one statement (one round trip). It is split only
when one statement could not do it right: a batch that names a task twice (an
``UPDATE … FROM unnest(…)`` changes a row once, however many items match it),
or one whose payloads would make a single parameter too large for the server
(a field is limited to 1 GB). The parts then run in order inside one
transaction, so the batch behaves as if its items ran one after the other and
is still applied whole or not at all.

An insert is written once, as steps (:func:`inserting`, :func:`duplicate`): a
generator that yields each query to run and is sent its rows back, with no I/O
of its own. :meth:`Statements.run` carries the steps out on a ``psycopg.Connection``,
:meth:`Statements.arun` awaits them on a caller's ``psycopg.AsyncConnection``, so both
kinds of connection run the same statements with the same parameters and the
same decisions between them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, nullcontext
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

import psycopg
from psycopg import pq
from psycopg.rows import RowFactory, dict_row

from tenure.errors import DuplicateTask, StoreError, UniqueConflict
from tenure.store.postgres import rows
from tenure.store.postgres.driver import is_duplicate_id
from tenure.store.postgres.pooling import PooledConnection
from tenure.store.postgres.rows import Row
from tenure.store.refusals import unique_conflict
from tenure.store.types import NewGate, Placement, PreparedTask

Connection = psycopg.Connection[Any]
AsyncConnection = psycopg.AsyncConnection[Any]

MAX_STATEMENT_BYTES = 64 << 20
"""Payload bytes (JSON data, results, errors) sent in one statement at most."""

T = TypeVar("T")
R = TypeVar("R")
Query = tuple[str, dict[str, Any]]
Steps = Generator[Query, list[Row], T]
"""Queries to run one after the other (a name in queries.sql, its parameters);
each is sent the rows of the one before, and the steps return ``T``."""


KEPT_CURSOR = frozenset({"insert_one"})
"""The statements run on a kept cursor of the store's own connections (see
``PooledConnection.kept_cursor``): frequent, with one task's parameters and a
one-row answer."""


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
    return conn.transaction() if _needs_block(conn, several) else nullcontext()


def aatomic(conn: AsyncConnection, several: bool) -> AbstractAsyncContextManager[Any]:
    """:func:`atomic` on an ``AsyncConnection``."""
    return conn.transaction() if _needs_block(conn, several) else nullcontext()


def _needs_block(conn: Connection | AsyncConnection, several: bool) -> bool:
    in_transaction = conn.info.transaction_status == pq.TransactionStatus.INTRANS
    return in_transaction or (conn.autocommit and several)


def _begins(conn: Connection | AsyncConnection) -> bool:
    """Whether the insert's first statement begins a transaction on ``conn``
    (idle, not autocommit): one that holds nothing of the caller's, so that
    after a refusal it is rolled back, leaving the connection as it was found."""
    return conn.info.transaction_status == pq.TransactionStatus.IDLE and not conn.autocommit


class Insert(NamedTuple):
    """A batch of new tasks as its statements write it."""

    ids: list[str]
    parts: list[Query]
    """Each statement and its parameters: ``insert_one`` for a single task, else
    ``insert_task`` for each part of the batch (see :func:`split`)."""
    locking: list[tuple[int, str, str]]
    """(index, task id, lock key) of the tasks that take their unique lock at
    enqueue, in the same transaction."""
    before: Sequence[Query] = ()
    """Statements run first, whose rows are not tasks (a flow's gates)."""

    @property
    def several(self) -> bool:
        """Whether it runs as more than one statement."""
        return len(self.parts) + len(self.before) > 1 or bool(self.locking)


def insert_of(tasks: Sequence[PreparedTask], now: datetime | None) -> Insert:
    """How ``tasks`` are written: their statements' parameters and their locks."""
    ids = [task.id for task in tasks]
    if len(tasks) == 1:
        parts = [("insert_one", rows.insert_one_params(tasks[0], now))]
    else:
        cuts = split(ids, [len(task.data_json) for task in tasks])
        parts = [("insert_task", rows.insert_params([tasks[i] for i in cut], now)) for cut in cuts]
    return Insert(
        ids,
        parts,
        [
            (index, task.id, task.unique.key)
            for index, task in enumerate(tasks)
            if task.unique is not None and task.locks_at_enqueue
        ],
    )


class Statements:
    """The store's named queries (one schema's: see
    :func:`~tenure.store.postgres.schema.queries`), run on a connection: the
    store's own or a caller's, sync or async."""

    def __init__(self, queries: Mapping[str, str]) -> None:
        self.q = queries

    def fetch(self, conn: Connection, query: str, params: dict[str, Any]) -> list[Row]:
        """Run the named ``query`` on ``conn`` and return its rows as dicts
        (whatever row factory the connection has, if it is a caller's)."""
        return self.fetch_made(conn, query, params, dict_row)

    def fetch_made(
        self, conn: Connection, query: str, params: dict[str, Any], row_factory: RowFactory[R]
    ) -> list[R]:
        """Run the named ``query`` on ``conn`` and return its rows as
        ``row_factory`` makes them."""
        if query in KEPT_CURSOR and isinstance(conn, PooledConnection):
            kept = conn.kept_cursor(row_factory)
            kept.execute(self.q[query], params)
            return kept.fetchall()
        with conn.cursor(row_factory=row_factory) as cur:
            cur.execute(self.q[query], params)
            return cur.fetchall()

    async def afetch(self, conn: AsyncConnection, query: str, params: dict[str, Any]) -> list[Row]:
        """:meth:`fetch` on an ``AsyncConnection``."""
        async with conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(self.q[query], params)
            return await cur.fetchall()

    def run(self, conn: Connection, steps: Steps[T]) -> T:
        """Carry ``steps`` out on ``conn``; what they return."""
        try:
            query, params = next(steps)
            while True:
                query, params = steps.send(self.fetch(conn, query, params))
        except StopIteration as done:
            result: T = done.value
            return result

    async def arun(self, conn: AsyncConnection, steps: Steps[T]) -> T:
        """:meth:`run` on an ``AsyncConnection``."""
        try:
            query, params = next(steps)
            while True:
                query, params = steps.send(await self.afetch(conn, query, params))
        except StopIteration as done:
            result: T = done.value
            return result

    def insert(self, conn: Connection, batch: Insert) -> list[Row]:
        """Insert every part of ``batch``, or nothing; ``DuplicateTask`` names an
        id that exists, ``UniqueConflict`` every task whose unique lock is held.

        If the caller's connection had no transaction open yet (and no
        autocommit), the one the insert began holds nothing of theirs: after a
        refusal it is rolled back, leaving the connection as it was found.
        """
        return self.guarded(
            conn, batch.ids, batch.several, lambda: self.run(conn, inserting(batch))
        )

    def guarded(
        self, conn: Connection, ids: Sequence[str], several: bool, write: Callable[[], T]
    ) -> T:
        """Run ``write`` (an insert of the tasks ``ids``) all-or-nothing on
        ``conn``, with :meth:`insert`'s refusals and its care of the caller's
        connection."""
        began = _begins(conn)
        try:
            with atomic(conn, several):
                return write()
        except (UniqueConflict, psycopg.Error) as exc:
            if began:
                conn.rollback()
            if not is_duplicate_id(exc):
                raise
        except BaseException:  # interrupted (Ctrl-C): leave no transaction of ours behind
            if began:
                with contextlib.suppress(Exception):
                    conn.rollback()
            raise
        refusal = self.run(conn, duplicate(ids))
        if began:
            conn.rollback()
        raise refusal

    async def ainsert(self, conn: AsyncConnection, batch: Insert) -> list[Row]:
        """:meth:`insert` on a caller's ``AsyncConnection``: the same
        statements, awaited, with the same savepoint and the same refusals."""
        began = _begins(conn)
        try:
            async with aatomic(conn, batch.several):
                return await self.arun(conn, inserting(batch))
        except (UniqueConflict, psycopg.Error) as exc:
            if began:
                await conn.rollback()
            if not is_duplicate_id(exc):
                raise
        except BaseException:  # cancelled: leave no transaction of ours behind, aborted
            if began:
                with contextlib.suppress(Exception):
                    await conn.rollback()
            raise
        refusal = await self.arun(conn, duplicate(batch.ids))
        if began:
            await conn.rollback()
        raise refusal


def flow_insert_of(
    tasks: Sequence[PreparedTask],
    placements: Sequence[Placement],
    gates: Sequence[NewGate],
    now: datetime | None,
) -> Insert:
    """How a flow is written: its gates, then its tasks, cut as any batch is."""
    ids = [task.id for task in tasks]
    cuts = split(ids, [len(task.data_json) for task in tasks])
    parts = [
        (
            "insert_task",
            rows.flow_params([tasks[i] for i in cut], [placements[i] for i in cut], now),
        )
        for cut in cuts
    ]
    return Insert(ids, parts, [], [("insert_gates", rows.gate_params(gates, now))])


def inserting(batch: Insert) -> Steps[list[Row]]:
    """The steps of an insert: every part, then the unique locks taken at
    enqueue; the rows inserted (id and times), in order."""
    for part in batch.before:
        yield part
    inserted: list[Row] = []
    for part in batch.parts:
        inserted += yield part
    yield from take_unique_locks(batch.locking)
    return inserted


def take_unique_locks(locking: Sequence[tuple[int, str, str]]) -> Steps[None]:
    """The steps that take the unique locks of ``locking`` (index, task id, key)
    or raise the ``UniqueConflict`` that names each one held by another task."""
    if not locking:
        return
    ids = [task_id for _, task_id, _ in locking]
    taken = {row["key"] for row in (yield "take_unique_locks", {"ids": ids})}
    refused = [(index, key) for index, _, key in locking if key not in taken]
    if not refused:
        return
    keys = [key for _, key in refused]
    holders = {row["key"]: row["task_id"] for row in (yield "unique_lock_holders", {"keys": keys})}
    raise unique_conflict([(index, key, holders.get(key)) for index, key in refused])


def duplicate(ids: Sequence[str]) -> Steps[DuplicateTask]:
    """The steps that find which of ``ids`` exists: the refusal naming it."""
    existing = {row["id"] for row in (yield "existing_ids", {"ids": list(ids)})}
    return DuplicateTask(next((i for i in ids if i in existing), ids[0]))


def callers(connection: object) -> Connection:
    """The caller's connection, if it is one this store can write on."""
    if isinstance(connection, psycopg.AsyncConnection):
        raise StoreError(
            "connection is a psycopg.AsyncConnection: write on it from async code, with "
            "aenqueue() (or Store.atask_create_many); enqueue() takes a psycopg.Connection"
        )
    if not isinstance(connection, psycopg.Connection):
        raise StoreError(f"connection must be a psycopg.Connection, not {type(connection)}")
    return connection


def async_callers(connection: object) -> AsyncConnection:
    """The caller's async connection, if it is one this store can write on."""
    if isinstance(connection, psycopg.Connection):
        raise StoreError(
            "connection is a psycopg.Connection: write on it with enqueue() (or "
            "Store.task_create_many); aenqueue() takes a psycopg.AsyncConnection"
        )
    if not isinstance(connection, psycopg.AsyncConnection):
        raise StoreError(f"connection must be a psycopg.AsyncConnection, not {type(connection)}")
    return connection
