"""A shop whose orders get their receipt from a tenure task, enqueued in the
same transaction as the order: the order and its task are committed together,
or rolled back together.

Run it beside a worker, both on the same PostgreSQL database::

    export TENURE_URL=postgresql://postgres@127.0.0.1:5432/shop
    export TENURE_API_TOKEN=$(python -c 'import secrets; print(secrets.token_urlsafe(24))')
    uvicorn examples.fastapi_app.main:app
    tenure worker --app examples.fastapi_app.tasks:queue

``tenure.contrib.fastapi`` does the glue: its lifespan opens the tenure App's
store and a pool of async connections for the shop's own tables, and closes
both at shutdown; its ``Transaction`` dependency gives an endpoint a connection
in a transaction committed before the response is sent; and tenure's dashboard
and HTTP API are served under ``/queue`` (when ``$TENURE_API_TOKEN`` is set).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException
from psycopg import AsyncConnection
from pydantic import BaseModel, Field

from examples.fastapi_app.tasks import queue, send_receipt
from tenure import TaskNotFound
from tenure.contrib.fastapi import TenureFastAPI

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

tenure_web = TenureFastAPI(queue)
Transaction = Annotated[AsyncConnection, Depends(tenure_web.transaction, scope="function")]
"""A connection in a transaction, committed before the endpoint's answer is sent."""


@asynccontextmanager
async def lifespan(api: FastAPI) -> AsyncIterator[None]:
    """Open the queue and the shop's pool before the first request (and make
    the shop's tables); close both after the last."""
    if queue.url.startswith("sqlite"):
        raise RuntimeError("set TENURE_URL to the shop's PostgreSQL database (postgresql://…)")
    async with tenure_web.lifespan(api):
        async with tenure_web.pool.connection() as conn:
            await conn.execute(SCHEMA)
        yield


app = FastAPI(title="shop", lifespan=lifespan)
if token := os.environ.get("TENURE_API_TOKEN"):
    tenure_web.mount(app, "/queue", token=token)


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


@app.post("/orders", status_code=201)
async def place_order(order: OrderIn, conn: Transaction) -> Enqueued:
    """Record the order, enqueue its receipt and take its stock: one
    transaction (the dependency's), committed before the answer is sent, so a
    refusal at any step leaves no order and no task."""
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
        # Raised inside the transaction: the order and its receipt task are
        # rolled back together.
        raise HTTPException(409, f"not enough {order.item} in stock")
    return Enqueued(order_id=order_id, task_id=handle.id)


@app.post("/orders/{order_id}/receipt", status_code=202)
async def resend_receipt(order_id: int) -> Enqueued:
    """Send an order's receipt again. Nothing is written with it, so the task is
    enqueued on its own (``aenqueue`` without a connection: committed at once)."""
    async with tenure_web.pool.connection() as conn:
        cursor = await conn.execute("SELECT 1 FROM orders WHERE id = %s", (order_id,))
        if await cursor.fetchone() is None:
            raise HTTPException(404, f"there is no order {order_id}")
    handle = await send_receipt.aenqueue(order_id)
    return Enqueued(order_id=order_id, task_id=handle.id)


@app.get("/orders/{order_id}")
async def get_order(order_id: int) -> Order:
    async with tenure_web.pool.connection() as conn:
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
