"""Transactional enqueue from async code: ``aenqueue`` on the caller's
``psycopg.AsyncConnection`` writes in its open transaction, with the checks,
unique locks, middleware headers and handles of the sync path; the task exists
if and only if the caller commits. Wrong kinds of connection are refused before
anything is written, on either store."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest

import tenure
from tenure import (
    ConfigError,
    DuplicateTask,
    InvalidInput,
    Status,
    Store,
    StoreError,
    Unique,
    UniqueConflict,
)
from tenure.hooks import Middleware
from tenure.store import NewTask, TaskFilter
from tenure.store.postgres import statements

T = TypeVar("T")
AsyncConnection = psycopg.AsyncConnection[Any]


@pytest.fixture
def app(postgres_store: Store, postgres_url: str) -> Iterator[tenure.App]:
    """An App on the run's PostgreSQL database, emptied (its store not yet open)."""
    application = tenure.App(postgres_url, unique_ttl=120)
    yield application
    application.close()


def declare(app: tenure.App, unique: Unique | None = None, name: str = "job") -> Any:
    def job(a: int, b: int = 0) -> int:
        return a + b

    return app.task(name=name, topic="t", unique=unique)(job)


def run(scenario: Callable[[AsyncConnection], Awaitable[T]], url: str, **options: Any) -> T:
    """Run ``scenario`` on a new async connection of the caller's (psycopg's
    default transaction mode unless ``options`` say otherwise), closed after."""

    async def main() -> T:
        conn = await psycopg.AsyncConnection.connect(url, **options)
        try:
            return await scenario(conn)
        finally:
            await conn.close()

    return asyncio.run(main())


def new(task_id: str) -> NewTask:
    return NewTask(topic="t", name="n", id=task_id)


def count(app: tenure.App) -> int:
    return app.store.task_count(TaskFilter(topic="t"))


# -- commit and rollback --------------------------------------------------------------


def test_the_task_exists_once_the_caller_commits(app: tenure.App, postgres_url: str) -> None:
    job = declare(app)

    async def scenario(conn: AsyncConnection) -> tenure.TaskHandle[int]:
        await conn.execute("CREATE TEMP TABLE orders (id int)")
        await conn.execute("INSERT INTO orders VALUES (1)")
        handle: tenure.TaskHandle[int] = await job.options(connection=conn).aenqueue(1, b=2)
        assert app.store.task_get(handle.id) is None  # not visible before the commit
        await conn.commit()
        return handle

    handle = run(scenario, postgres_url)
    stored = app.store.task_get(handle.id)
    assert stored is not None and stored == handle.task
    assert stored.status is Status.PENDING
    assert stored.data == {"args": [1], "kwargs": {"b": 2}}


def test_nothing_is_left_when_the_caller_rolls_back(app: tenure.App, postgres_url: str) -> None:
    job = declare(app, Unique(lock="until_executed"))

    async def scenario(conn: AsyncConnection) -> str:
        handle = await job.options(connection=conn).aenqueue(1)
        assert handle.rejected is None and handle.task is not None
        await conn.rollback()
        return str(handle.id)

    task_id = run(scenario, postgres_url)
    assert app.store.task_get(task_id) is None
    assert app.tasks.locks() == [] and app.store.event_list() == []
    assert job.enqueue(1).rejected is None  # the lock was never held


def test_a_batch_commits_and_rolls_back_as_one(app: tenure.App, postgres_url: str) -> None:
    job = declare(app)

    async def scenario(conn: AsyncConnection) -> list[str]:
        on_conn = job.options(connection=conn)
        kept = await on_conn.aenqueue_many([job.call(1), (2,), {"a": 3}])
        await conn.commit()
        await on_conn.aenqueue_many([job.call(4), job.call(5)])
        await conn.rollback()
        return [handle.id for handle in kept]

    ids = run(scenario, postgres_url)
    assert count(app) == 3
    assert [app.store.task_get(i).data["args"] for i in ids] == [[1], [2], []]  # type: ignore[union-attr, index]


def test_a_transaction_block_that_raises_takes_the_task_with_it(
    app: tenure.App, postgres_url: str
) -> None:
    job = declare(app)

    async def enqueue_then_fail(conn: AsyncConnection) -> None:
        async with conn.transaction():
            await job.options(connection=conn, id="doomed").aenqueue(1)
            raise RuntimeError("the application's work failed")

    async def scenario(conn: AsyncConnection) -> None:
        with pytest.raises(RuntimeError):
            await enqueue_then_fail(conn)
        async with conn.transaction():
            await job.options(connection=conn, id="kept").aenqueue(2)

    run(scenario, postgres_url, autocommit=True)
    assert app.store.task_get("doomed") is None
    assert app.store.task_get("kept") is not None


def test_in_autocommit_without_a_block_the_task_commits_at_once(
    app: tenure.App, postgres_url: str
) -> None:
    job = declare(app, Unique(lock="until_executed"))

    async def scenario(conn: AsyncConnection) -> str:
        handle = await job.options(connection=conn).aenqueue(1)  # insert and lock: a block
        assert app.store.task_get(handle.id) is not None  # committed already
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        return str(handle.id)

    task_id = run(scenario, postgres_url, autocommit=True)
    assert [lock.task_id for lock in app.tasks.locks()] == [task_id]


# -- refusals inside the caller's transaction -------------------------------------------


async def with_order(conn: AsyncConnection) -> None:
    """The application's own write, earlier in the same transaction."""
    await conn.execute("CREATE TEMP TABLE orders (id int)")
    await conn.execute("INSERT INTO orders VALUES (1)")


async def orders(conn: AsyncConnection) -> int:
    cursor = await conn.execute("SELECT count(*) FROM orders")
    row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


def test_a_rejected_unique_task_leaves_the_transaction_usable(
    app: tenure.App, postgres_url: str
) -> None:
    job = declare(app, Unique(lock="until_executed", on_conflict="reject"))
    holder = job.enqueue(1)

    async def scenario(conn: AsyncConnection) -> tenure.TaskHandle[int]:
        await with_order(conn)
        handle: tenure.TaskHandle[int] = await job.options(connection=conn).aenqueue(1)
        assert await orders(conn) == 1
        await conn.commit()
        return handle

    handle = run(scenario, postgres_url)
    assert handle.rejected is not None and handle.rejected.holder == holder.id
    assert handle.task is None and app.store.task_get(handle.id) is None
    assert count(app) == 1


def test_a_raising_unique_task_leaves_the_transaction_usable(
    app: tenure.App, postgres_url: str
) -> None:
    job = declare(app, Unique(lock="until_executed", on_conflict="raise"))
    holder = job.enqueue(1)

    async def scenario(conn: AsyncConnection) -> None:
        await with_order(conn)
        with pytest.raises(UniqueConflict) as raised:
            await job.options(connection=conn).aenqueue(1)
        assert raised.value.holder == holder.id
        other = await job.options(connection=conn).aenqueue(2)  # another key: written
        assert other.rejected is None
        assert await orders(conn) == 1
        await conn.commit()

    run(scenario, postgres_url)
    assert count(app) == 2


def test_a_lock_taken_earlier_in_the_same_transaction_is_held(
    app: tenure.App, postgres_url: str
) -> None:
    job = declare(app, Unique(lock="until_executed", on_conflict="reject"))

    async def scenario(conn: AsyncConnection) -> None:
        first = await job.options(connection=conn).aenqueue(1)
        second = await job.options(connection=conn).aenqueue(1)
        assert second.rejected is not None and second.rejected.holder == first.id
        await conn.rollback()

    run(scenario, postgres_url)
    assert count(app) == 0 and app.tasks.locks() == []


def test_a_duplicate_id_leaves_the_transaction_usable(app: tenure.App, postgres_url: str) -> None:
    app.store.task_create(new("taken"))

    async def scenario(conn: AsyncConnection) -> None:
        await with_order(conn)
        with pytest.raises(DuplicateTask) as raised:
            await app.store.atask_create_many(
                [new("fresh"), new("taken")],
                connection=conn,
            )
        assert raised.value.task_id == "taken"
        assert await orders(conn) == 1
        await app.store.atask_create_many([new("after")], connection=conn)
        await conn.commit()

    run(scenario, postgres_url)
    assert app.store.task_get("fresh") is None
    assert app.store.task_get("after") is not None


def test_a_refusal_on_an_idle_connection_leaves_no_transaction_open(
    app: tenure.App, postgres_url: str
) -> None:
    app.store.task_create(new("taken"))

    async def scenario(conn: AsyncConnection) -> None:
        with pytest.raises(DuplicateTask):
            await app.store.atask_create_many([new("taken")], connection=conn)
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

    run(scenario, postgres_url)


def test_a_batch_cut_into_statements_is_still_all_or_nothing(
    app: tenure.App, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(statements, "MAX_STATEMENT_BYTES", 1)  # one statement per task
    app.store.task_create(new("taken"))
    batch = [new(f"new-{i}") for i in range(3)]

    async def scenario(conn: AsyncConnection) -> list[str]:
        with pytest.raises(DuplicateTask):
            await app.store.atask_create_many([*batch, new("taken")], connection=conn)
        created = await app.store.atask_create_many(batch, connection=conn)
        await conn.commit()
        return [task.id for task in created]

    assert run(scenario, postgres_url) == ["new-0", "new-1", "new-2"]
    assert count(app) == 4


def test_bad_input_is_refused_before_anything_is_sent(app: tenure.App, postgres_url: str) -> None:
    job = declare(app)

    async def scenario(conn: AsyncConnection) -> None:
        with pytest.raises(InvalidInput, match="do not fit"):
            await job.options(connection=conn).aenqueue()
        with pytest.raises(InvalidInput) as raised:
            await job.options(connection=conn).aenqueue({1, 2})
        assert raised.value.field == "args[0]"
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

    run(scenario, postgres_url)
    assert count(app) == 0


# -- what the sync path does too ------------------------------------------------------


class Stamp(Middleware):
    def enqueue(self, name: str, headers: dict[str, str]) -> None:
        headers["request-id"] = "r-42"


def test_middleware_headers_are_added(app: tenure.App, postgres_url: str) -> None:
    app.add_middleware(Stamp())
    job = declare(app)

    async def scenario(conn: AsyncConnection) -> str:
        handle = await job.options(connection=conn).aenqueue(1)
        await conn.commit()
        return str(handle.id)

    stored = app.store.task_get(run(scenario, postgres_url))
    assert stored is not None
    assert stored.data == {"args": [1], "kwargs": {}, "headers": {"request-id": "r-42"}}


def test_without_a_connection_aenqueue_writes_on_its_own(app: tenure.App) -> None:
    job = declare(app)
    handle = asyncio.run(job.aenqueue(5))
    assert handle.refresh().data == {"args": [5], "kwargs": {}}


# -- the wrong connection -------------------------------------------------------------


def test_aenqueue_refuses_a_sync_connection(app: tenure.App, postgres_url: str) -> None:
    job = declare(app)
    with psycopg.connect(postgres_url) as conn:
        with pytest.raises(StoreError, match=r"psycopg\.Connection: write on it with enqueue"):
            asyncio.run(job.options(connection=conn).aenqueue(1))
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert count(app) == 0


def test_enqueue_refuses_an_async_connection(app: tenure.App, postgres_url: str) -> None:
    job = declare(app)

    async def scenario(conn: AsyncConnection) -> None:
        with pytest.raises(StoreError, match=r"AsyncConnection: write on it .* aenqueue"):
            job.options(connection=conn).enqueue(1)
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

    run(scenario, postgres_url)
    assert count(app) == 0


def test_the_store_entry_point_needs_a_connection(app: tenure.App) -> None:
    with pytest.raises(ConfigError, match="none was given"):
        asyncio.run(app.store.atask_create_many([NewTask(topic="t", name="n")], connection=None))


def test_sqlite_refuses_async_enqueue_on_a_connection(tmp_path: Path, postgres_url: str) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 'tenure.db'}")
    job = declare(app)
    try:

        async def scenario(conn: AsyncConnection) -> None:
            with pytest.raises(ConfigError, match=r"pass a sqlite3\.Connection to enqueue"):
                await job.options(connection=conn).aenqueue(1)

        run(scenario, postgres_url)
        own = sqlite3.connect(tmp_path / "tenure.db")
        try:
            with pytest.raises(ConfigError, match="SQLiteStore cannot write on an async"):
                asyncio.run(job.options(connection=own).aenqueue(1))
        finally:
            own.close()
        assert app.store.task_count(TaskFilter(topic="t")) == 0
    finally:
        app.close()


def test_a_cancelled_enqueue_leaves_an_idle_connection_usable(
    app: tenure.App, postgres_url: str
) -> None:
    """Cancelled while its insert waits on a lock, on a connection whose
    transaction the insert began itself: that transaction is rolled back, not
    left aborted under the caller."""
    job = declare(app)
    app.store  # noqa: B018 - opened (and migrated) before the table is locked

    async def scenario(conn: AsyncConnection) -> str:
        with psycopg.connect(postgres_url) as blocker:
            blocker.execute("LOCK TABLE tenure.tasks IN ACCESS EXCLUSIVE MODE")
            pending = asyncio.ensure_future(job.options(connection=conn).aenqueue(1))
            with psycopg.connect(postgres_url, autocommit=True) as watcher:
                for _ in range(500):  # until the insert waits on the lock
                    waiting = watcher.execute(
                        "SELECT count(*) FROM pg_locks WHERE NOT granted"
                    ).fetchone()
                    if waiting and waiting[0]:
                        break
                    await asyncio.sleep(0.01)
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pending
            blocker.rollback()
        status = conn.info.transaction_status.name
        await conn.execute("SELECT 1")  # usable
        return status

    assert run(scenario, postgres_url) == "IDLE"
    assert count(app) == 0
