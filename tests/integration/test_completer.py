"""The completer never drops an ending for a passing outage, and gives up only
when told to (a second stop signal), leaving the task to its lease."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from urllib.parse import urlsplit

import psycopg
import pytest

from tenure import Lease, Status, Task
from tenure.retry import Backoff
from tenure.store.postgres.backend import PostgresStore
from tenure.worker.completer import Completer
from tenure.worker.held import Held, Holdings
from tenure.worker.runner import Succeeded
from tests.conftest import POSTGRES_URL


@pytest.fixture
def doomed(blank_postgres_url: str) -> Callable[[], None]:
    """Makes the blank database stop taking connections and drop those it had: a
    store opened on it can no longer reach it."""
    dbname = urlsplit(blank_postgres_url).path.lstrip("/")

    def shut() -> None:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{dbname}" ALLOW_CONNECTIONS false')
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (dbname,),
            )

    return shut


def held_task(task_id: str) -> Held:
    now = datetime.now(UTC)
    task = Task(id=task_id, topic="t", name="n", status=Status.RUNNING, created_at=now)
    return Held(task, Lease(task_id, "w", 2))


def test_an_unreachable_store_is_given_up_on_when_told(
    blank_postgres_url: str, doomed: Callable[[], None]
) -> None:
    store = PostgresStore(blank_postgres_url, pool_timeout=0.2)  # a real server ...
    doomed()  # ... that no longer lets the store in
    holdings, give_up = Holdings(), threading.Event()
    completer = Completer(store, holdings, lambda _: Backoff(), give_up=give_up)
    completer.start()
    try:
        held = held_task("a")
        holdings.add(held)
        holdings.end(held)
        completer.put(held, Succeeded("result"))
        give_up.set()
        closing = threading.Thread(target=completer.close)
        started = time.monotonic()
        closing.start()
        closing.join(30)
        assert not closing.is_alive(), "the completer kept retrying after it was told to give up"
        assert time.monotonic() - started < 30
        assert len(holdings) == 0  # forgotten: the store still leases it to this worker
    finally:
        store.close()
