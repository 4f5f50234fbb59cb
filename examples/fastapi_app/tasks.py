"""The example's tasks, in a module of their own: the web app enqueues them and
``tenure worker --app examples.fastapi_app.tasks:queue`` runs them, without
importing the web app (a worker needs neither FastAPI nor its routes).

The queue's store is the shop's own PostgreSQL database (``$TENURE_URL``): a
task can be enqueued in the same transaction as the row it is about only when
both live in one database.
"""

from __future__ import annotations

import psycopg

import tenure

queue = tenure.App()  # $TENURE_URL, e.g. postgresql://postgres@127.0.0.1:5432/shop


@queue.task(topic="receipts", retries=3)
def send_receipt(order_id: int) -> str:
    """Send the receipt of an order (here: record when it was sent).

    Enqueued in the order's own transaction, so the order is always there when
    this runs: the worker cannot see the task before the order is committed.
    """
    with psycopg.connect(queue.url) as conn:
        row = conn.execute(
            "UPDATE orders SET receipt_sent_at = now() WHERE id = %s RETURNING email",
            (order_id,),
        ).fetchone()
    if row is None:
        raise LookupError(f"there is no order {order_id}")
    return f"receipt of order {order_id} sent to {row[0]}"
