"""A shop whose orders get their receipt from a tenure task, enqueued in the
same transaction as the order: the order and its task are committed together,
or rolled back together.

Run it beside a worker, both on the same PostgreSQL database::

    export TENURE_URL=postgresql://postgres@127.0.0.1:5432/shop
    uvicorn examples.fastapi_app.main:app
    tenure worker --app examples.fastapi_app.tasks:queue

The lifespan opens the tenure App's store and a ``psycopg_pool`` pool of async
connections for the shop's own tables, and closes both at shutdown.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypedDict

from fastapi import FastAPI, HTTPException, Request
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, Field

from examples.fastapi_app.tasks import queue, send_receipt
from tenure import TaskNotFound

SCHEMA = """
CREATE TABLE IF NOT EXISTS stock (item text PRIMARY KEY, available int NOT NULL);
CREATE TABLE IF NOT EXISTS orders (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email text NOT NULL,
    item text NOT NULL REFERENCES stock,
    quantity int NOT NULL CHECK (quantity > 0),
    receipt_sent_at timestamptz
);
INSERT INTO stock VALUES ('book', 100), ('lamp', 2) ON CONFLICT DO NOTHING;
"""
"""The shop's own tables (a real app has migrations of its own for them)."""

Pool = AsyncConnectionPool[AsyncConnection[tuple[Any, ...]]]


class State(TypedDict):
    """What the lifespan gives every request (``request.state``)."""

    pool: Pool


@asynccontextmanager
async def lifespan(api: FastAPI) -> AsyncIterator[State]:
    """Open the queue and the shop's pool before the first request; close both
    after the last."""
    if queue.url.startswith("sqlite"):
        raise RuntimeError("set TENURE_URL to the shop's PostgreSQL database (postgresql://…)")
    # Opening the store connects and applies tenure's migrations: blocking
    # work, so it runs in a thread rather than on the event loop.
    await asyncio.to_thread(lambda: queue.store)
    pool: Pool = AsyncConnectionPool(
        queue.url,
        kwargs={"autocommit": True},  # transactions are explicit: conn.transaction()
        check=AsyncConnectionPool.check_connection,
        open=False,
    )
    await pool.open(wait=True)
    try:
        async with pool.connection() as conn:
            await conn.execute(SCHEMA)
        yield {"pool": pool}
    finally:
        await pool.close()
        await asyncio.to_thread(queue.close)


app = FastAPI(title="shop", lifespan=lifespan)


class OrderIn(BaseModel):
    email: str = Field(min_length=3)
    item: str
    quantity: int = Field(gt=0)


class Enqueued(BaseModel):
    order_id: int
    task_id: str


class Order(BaseModel):
    id: int
    email: str
    item: str
    quantity: int
    receipt_sent: bool


class TaskStatus(BaseModel):
    id: str
    status: str
    attempts: int
    result: Any = None


def pool_of(request: Request) -> Pool:
    pool: Pool = request.state.pool
    return pool


@app.post("/orders", status_code=201)
async def place_order(order: OrderIn, request: Request) -> Enqueued:
    """Record the order, enqueue its receipt and take its stock: one
    transaction, so a refusal at any step leaves no order and no task."""
    async with pool_of(request).connection() as conn, conn.transaction():
        cursor = await conn.execute(
            "INSERT INTO orders (email, item, quantity) VALUES (%s, %s, %s) RETURNING id",
            (order.email, order.item, order.quantity),
        )
        row = await cursor.fetchone()
        assert row is not None  # INSERT … RETURNING gives its row
        order_id = int(row[0])
        # On this connection, inside this transaction: the task exists if and
        # only if the order does, and no worker sees it before the commit.
        handle = await send_receipt.options(connection=conn).aenqueue(order_id)
        taken = await conn.execute(
            "UPDATE stock SET available = available - %s WHERE item = %s AND available >= %s",
            (order.quantity, order.item, order.quantity),
        )
        if taken.rowcount == 0:
            # Raised inside the transaction block: the order and its receipt
            # task are rolled back together.
            raise HTTPException(409, f"not enough {order.item} in stock")
    return Enqueued(order_id=order_id, task_id=handle.id)


@app.post("/orders/{order_id}/receipt", status_code=202)
async def resend_receipt(order_id: int, request: Request) -> Enqueued:
    """Send an order's receipt again. Nothing is written with it, so the task is
    enqueued on its own (``aenqueue`` without a connection: committed at once)."""
    async with pool_of(request).connection() as conn:
        cursor = await conn.execute("SELECT 1 FROM orders WHERE id = %s", (order_id,))
        if await cursor.fetchone() is None:
            raise HTTPException(404, f"there is no order {order_id}")
    handle = await send_receipt.aenqueue(order_id)
    return Enqueued(order_id=order_id, task_id=handle.id)


@app.get("/orders/{order_id}")
async def get_order(order_id: int, request: Request) -> Order:
    async with pool_of(request).connection() as conn:
        cursor = await conn.execute(
            "SELECT id, email, item, quantity, receipt_sent_at IS NOT NULL"
            " FROM orders WHERE id = %s",
            (order_id,),
        )
        row = await cursor.fetchone()
    if row is None:
        raise HTTPException(404, f"there is no order {order_id}")
    order_id, email, item, quantity, receipt_sent = row
    return Order(id=order_id, email=email, item=item, quantity=quantity, receipt_sent=receipt_sent)


@app.get("/tasks/{task_id}")
def task_status(task_id: str) -> TaskStatus:
    """A task's status and result. A plain ``def``: tenure's reads block, and
    FastAPI runs such endpoints in its thread pool, off the event loop."""
    try:
        task = queue.tasks.get(task_id)
    except TaskNotFound:
        raise HTTPException(404, f"there is no task {task_id}") from None
    return TaskStatus(id=task.id, status=task.status, attempts=task.attempts, result=task.result)
