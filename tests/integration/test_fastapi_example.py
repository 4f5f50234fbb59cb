"""The FastAPI example (examples/fastapi_app) end to end, on a PostgreSQL
database of its own: its lifespan, an order and its receipt task committed
together or rolled back together, an enqueue outside any transaction, task
status, and a real ``tenure worker`` running the tasks to done.

The same app is also tested as a user's suite would test it without a worker:
on another database of its own (``tenure.testing.isolated``, so that the
worker of the tests above never takes its tasks), with the receipts run in the
test's process by ``tenure.testing.run_until_empty`` and in eager mode.

Like every PostgreSQL test, it is skipped without a server unless
``TENURE_REQUIRE_POSTGRES=1``, which makes that a failure (tests/conftest.py).
"""

from __future__ import annotations

import importlib
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from starlette.testclient import TestClient

from tenure.store import TaskFilter
from tenure.testing import eager, isolated, run_until_empty
from tests.conftest import POSTGRES_URL
from tests.integration.workers import WorkerProcess

pytestmark = pytest.mark.slow

WORKER_APP = "examples.fastapi_app.tasks:queue"
TOKEN = "shop-operator-token-0123456789"


@contextmanager
def own_database(postgres_url: str, prefix: str) -> Iterator[str]:
    """The URL of a database created here and dropped after."""
    dbname = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{dbname}"')
    try:
        yield urlunsplit(urlsplit(postgres_url)._replace(path="/" + dbname))
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


@pytest.fixture(scope="module")
def example_url(postgres_url: str) -> Iterator[str]:
    """A database of the example's own, created here and dropped after.
    (``postgres_url`` first: it skips, or fails, when there is no server.)"""
    with own_database(postgres_url, "tenure_fastapi_example") as url:
        yield url


@pytest.fixture(scope="module")
def client(example_url: str) -> Iterator[TestClient]:
    """The example app with its lifespan run (the store opened and migrated,
    the shop's tables made), pointed at the example's database."""
    from examples.fastapi_app import main, tasks

    tasks.queue.use(example_url)
    before = os.environ.get("TENURE_API_TOKEN")
    os.environ["TENURE_API_TOKEN"] = TOKEN  # the example mounts the queue's pages with it
    try:
        importlib.reload(main)
    finally:
        if before is None:
            del os.environ["TENURE_API_TOKEN"]
        else:
            os.environ["TENURE_API_TOKEN"] = before
    with TestClient(main.app) as opened:
        yield opened


@pytest.fixture(scope="module")
def worker(example_url: str, client: TestClient) -> Iterator[WorkerProcess]:
    """A ``tenure worker`` of the example's tasks (started once the lifespan
    has made the tables its tasks write to)."""
    process = WorkerProcess(example_url, app=WORKER_APP)
    yield process
    process.stop()


def sql(url: str, query: str, *params: Any) -> Any:
    """The first column of the first row of ``query``, read as the shop."""
    with psycopg.connect(url) as conn:
        row = conn.execute(query, params).fetchone()
        assert row is not None
        return row[0]


def receipts() -> int:
    """How many receipt tasks the queue holds."""
    from examples.fastapi_app.tasks import queue

    return queue.store.task_count(TaskFilter(topic="receipts"))


def wait_done(client: TestClient, task_id: str, timeout: float = 30) -> dict[str, Any]:
    """Poll the status endpoint until the task is done (fail on any other end)."""
    deadline = time.monotonic() + timeout
    while True:
        answer = client.get(f"/tasks/{task_id}")
        assert answer.status_code == 200, answer.text
        status: dict[str, Any] = answer.json()
        if status["status"] != "pending" and status["status"] != "running":
            assert status["status"] == "done", status
            return status
        assert time.monotonic() < deadline, f"task {task_id} still {status['status']}"
        time.sleep(0.05)


def test_an_order_and_its_receipt_task_commit_together(
    client: TestClient, worker: WorkerProcess, example_url: str
) -> None:
    placed = client.post(
        "/orders", json={"email": "ada@example.com", "item": "book", "quantity": 1}
    )
    assert placed.status_code == 201, placed.text
    order_id, task_id = placed.json()["order_id"], placed.json()["task_id"]
    status = wait_done(client, task_id)
    assert status["result"] == f"receipt of order {order_id} sent to ada@example.com"
    assert status["attempts"] == 1
    assert client.get(f"/orders/{order_id}").json()["receipt_sent"] is True


def test_a_refused_order_leaves_neither_its_row_nor_its_task(
    client: TestClient, worker: WorkerProcess, example_url: str
) -> None:
    orders_before = sql(example_url, "SELECT count(*) FROM orders")
    receipts_before = receipts()
    refused = client.post(
        "/orders", json={"email": "bo@example.com", "item": "lamp", "quantity": 3}
    )
    assert refused.status_code == 409
    assert refused.json() == {"detail": "not enough lamp in stock"}
    # The task was enqueued before the stock ran out, in the same transaction:
    # rolled back with the order.
    assert sql(example_url, "SELECT count(*) FROM orders") == orders_before
    assert receipts() == receipts_before
    assert sql(example_url, "SELECT available FROM stock WHERE item = 'lamp'") == 2


def test_a_receipt_sent_again_is_enqueued_on_its_own(
    client: TestClient, worker: WorkerProcess
) -> None:
    placed = client.post("/orders", json={"email": "cy@example.com", "item": "book", "quantity": 2})
    order_id, first = placed.json()["order_id"], placed.json()["task_id"]
    again = client.post(f"/orders/{order_id}/receipt")
    assert again.status_code == 202, again.text
    assert again.json()["order_id"] == order_id and again.json()["task_id"] != first
    for task_id in (first, again.json()["task_id"]):
        assert wait_done(client, task_id)["result"].startswith(f"receipt of order {order_id} ")


def test_the_queue_is_served_under_the_shops_prefix(
    client: TestClient, worker: WorkerProcess
) -> None:
    placed = client.post("/orders", json={"email": "ha@example.com", "item": "book", "quantity": 1})
    task_id = placed.json()["task_id"]
    assert client.get(f"/queue/api/tasks/{task_id}").status_code == 401
    auth = {"Authorization": f"Bearer {TOKEN}"}
    found = client.get(f"/queue/api/tasks/{task_id}", headers=auth)
    assert found.status_code == 200 and found.json()["topic"] == "receipts"
    login = client.get("/queue/", follow_redirects=False)
    assert login.status_code == 303 and login.headers["location"].startswith("/queue/login")
    assert client.get("/orders/999999").status_code == 404  # the shop's routes are its own


def test_unknown_orders_and_tasks_are_not_found(client: TestClient) -> None:
    assert client.post("/orders/999999/receipt").status_code == 404
    assert client.get("/orders/999999").status_code == 404
    assert client.get("/tasks/no-such-task").status_code == 404
    assert (
        client.post("/orders", json={"email": "d@x.y", "item": "book", "quantity": 0}).status_code
        == 422
    )


@pytest.fixture(scope="module")
def in_process_url(postgres_url: str) -> Iterator[str]:
    """Another database of the example's, where no worker runs."""
    with own_database(postgres_url, "tenure_fastapi_in_process") as url:
        yield url


@pytest.fixture
def in_process(in_process_url: str) -> Iterator[TestClient]:
    """The example app, its queue pointed at ``in_process_url`` for the test
    (and put back after it): the tasks run only when the test runs them."""
    from examples.fastapi_app import main, tasks

    with isolated(tasks.queue, in_process_url), TestClient(main.app) as opened:
        yield opened


def test_run_until_empty_sends_the_receipt_of_a_placed_order(in_process: TestClient) -> None:
    from examples.fastapi_app.tasks import queue

    placed = in_process.post(
        "/orders", json={"email": "ed@example.com", "item": "book", "quantity": 1}
    ).json()
    assert in_process.get(f"/tasks/{placed['task_id']}").json()["status"] == "pending"

    drained = run_until_empty(queue)

    assert (drained.done, drained.failed) == (1, 0)
    status = in_process.get(f"/tasks/{placed['task_id']}").json()
    assert status["result"] == f"receipt of order {placed['order_id']} sent to ed@example.com"
    assert in_process.get(f"/orders/{placed['order_id']}").json()["receipt_sent"] is True


def test_a_refused_order_leaves_nothing_to_run(in_process: TestClient) -> None:
    from examples.fastapi_app.tasks import queue

    refused = in_process.post(
        "/orders", json={"email": "fi@example.com", "item": "lamp", "quantity": 99}
    )

    assert refused.status_code == 409
    assert len(run_until_empty(queue)) == 0


def test_a_receipt_of_no_order_is_retried_then_fails_without_waiting(
    in_process: TestClient,
) -> None:
    from examples.fastapi_app.tasks import queue, send_receipt

    handle = send_receipt.enqueue(999_999)

    drained = run_until_empty(queue)  # the retries' backoff: the clock moves ahead

    assert (drained.retried, drained.failed) == (3, 1)
    task = handle.refresh()
    assert task.attempts == 4
    assert "there is no order 999999" in str(task.error)


def test_in_eager_mode_an_enqueue_runs_what_is_queued_before_it_returns(
    in_process: TestClient,
) -> None:
    from examples.fastapi_app.tasks import queue

    def status(task_id: str) -> str:
        answer: str = in_process.get(f"/tasks/{task_id}").json()["status"]
        return answer

    with eager(queue):
        order = {"email": "gu@example.com", "item": "book", "quantity": 1}
        placed = in_process.post("/orders", json=order).json()
        # Written on the endpoint's connection, in its transaction: eager mode
        # cannot run it at the enqueue (nothing saw it before the commit).
        assert status(placed["task_id"]) == "pending"
        # aenqueue without a connection: committed at once, and the queue run.
        again = in_process.post(f"/orders/{placed['order_id']}/receipt").json()

    assert status(again["task_id"]) == "done"
    assert status(placed["task_id"]) == "done"
