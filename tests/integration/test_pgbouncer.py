"""tenure through PgBouncer in transaction pooling mode (Debian's ``pgbouncer``,
1.18, which keeps no prepared statements), on a private one in front of the
test server (:mod:`tests.integration.pgbouncer`).

Each client runs well past psycopg's prepare threshold (a statement's fifth
run), on a pool of fewer server sessions than clients: a statement prepared
on one server session would be missing on the next, or found under another
client's name. Enqueue from threads, worker processes, the scheduler's cycle,
``tenure serve`` and the CLI all work through it; a worker listens on a
direct connection when its URL names one (``?listen=``), and otherwise polls,
saying so in one WARNING.

Without a pgbouncer program these tests are skipped, or fail when the run
requires PostgreSQL (``TENURE_REQUIRE_POSTGRES=1``, as in CI).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, cast
from urllib.parse import quote

import pytest

from tenure import ConfigError, Status
from tenure.maintenance.scheduler import Scheduler
from tenure.store import NewTask, Store, open_store
from tenure.store.postgres.backend import PostgresStore
from tenure.store.types import ReserveParams, TaskFilter
from tests.apps.basic import add
from tests.conformance.support import FakeClock
from tests.conftest import POSTGRES_URL, _empty_postgres, _require_postgres, own_database
from tests.integration.pgbouncer import MissingPgBouncer, PgBouncer
from tests.integration.workers import ROOT, WorkerProcess, wait_for, wait_until

POLLING = "LISTEN is not heard"
"""Words of the WARNING a store logs when it polls instead of listening."""
THREADS = 6
PER_THREAD = 25
"""Single enqueues (and reads) per thread: five times psycopg's prepare threshold."""


@pytest.fixture(scope="module")
def bouncer() -> Iterator[PgBouncer]:
    try:
        running = PgBouncer(POSTGRES_URL)
    except MissingPgBouncer as exc:
        if _require_postgres():
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(str(exc))
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def pooled_url(postgres_url: str, bouncer: PgBouncer) -> str:
    """The run's database, emptied, through the pgbouncer."""
    _empty_postgres(postgres_url)
    return bouncer.url(postgres_url)


@pytest.fixture
def direct(postgres_url: str) -> Iterator[Store]:
    """The same database, straight to the server: what the tests check with."""
    with open_store(postgres_url) as store:
        yield store


def count(store: Store, status: Status | None = None) -> int:
    return store.task_count(TaskFilter(status=status))


def adds(n: int) -> list[NewTask]:
    """``n`` tasks of the worker's App (``add(i, 1)``), as enqueue makes them."""
    return [add.prepared(add.new_task((i, 1), {})) for i in range(n)]


def test_a_store_knows_whether_a_pooler_is_in_between_and_where_to_listen(
    pooled_url: str, postgres_url: str
) -> None:
    """Through the pooler it listens only on the ``listen=`` URL; directly, as ever."""
    listening = f"{pooled_url}?listen={quote(postgres_url, safe='')}"
    with (
        open_store(pooled_url) as through,
        open_store(listening) as told,
        open_store(postgres_url) as straight,
    ):
        stores = [cast(PostgresStore, store) for store in (through, told, straight)]
        assert [store.pooled for store in stores] == [True, True, False]
        assert [store.listen(5) for store in stores] == [False, True, True]
        # The server sees the pooler's connections, not each store's pool:
        # tenure doctor does not count them against max_connections.
        assert [store.connections_at_most for store in stores] == [None, None, 12]


def test_enqueue_one_and_many_from_threads(pooled_url: str, direct: Store) -> None:
    errors: list[BaseException] = []

    def produce(store: Store, n: int) -> None:
        try:
            for _ in range(PER_THREAD):
                made = store.task_create(adds(1)[0])
                assert store.task_get(made.id) is not None
            batch = adds(40)
            for part in range(5):
                store.task_create_many(batch[part * 8 : part * 8 + 8])
        except BaseException as exc:  # reported by the test's thread
            errors.append(exc)

    with open_store(pooled_url, pool_max=THREADS) as store:
        threads = [threading.Thread(target=produce, args=(store, n)) for n in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert count(direct) == THREADS * (PER_THREAD + 40)


def test_a_worker_drains_through_it_polling_after_one_warning(
    pooled_url: str, direct: Store
) -> None:
    with open_store(pooled_url) as store:
        for _ in range(3):
            store.task_create_many(adds(40))
    worker = WorkerProcess(pooled_url, "--concurrency", "4")
    try:
        wait_for(lambda: count(direct, Status.DONE) == 120, "the worker to run 120 tasks")
        with open_store(pooled_url) as store:  # and one more, after the queue ran dry
            late = store.task_create(adds(1)[0])
        assert wait_until(direct, late.id, lambda task: task.finished).status is Status.DONE
    finally:
        worker.stop()
    warnings = [line for line in worker.lines if POLLING in line]
    assert len(warnings) == 1, "\n".join(worker.lines)
    assert "WARNING" in warnings[0] and "listen=" in warnings[0]
    assert not [line for line in worker.lines if "ERROR" in line], "\n".join(worker.lines)


def test_a_worker_given_a_direct_url_to_listen_on_is_woken_at_once(
    pooled_url: str, postgres_url: str, direct: Store
) -> None:
    """With a poll of a minute, only a notification can have it take each task
    within seconds: heard on the direct connection, as LISTEN is not through
    pgbouncer."""
    url = f"{pooled_url}?listen={quote(postgres_url, safe='')}"
    worker = WorkerProcess(url, "--poll", "60")
    try:
        with open_store(url) as store:
            for _ in range(5):
                task = store.task_create(adds(1)[0])
                done = wait_until(direct, task.id, lambda task: task.finished, timeout=15)
                assert done.status is Status.DONE
    finally:
        worker.stop()
    assert not [line for line in worker.lines if POLLING in line], "\n".join(worker.lines)


def test_the_schedulers_cycle_supervises_and_prunes_through_it(pooled_url: str) -> None:
    old = datetime.now(UTC) - timedelta(hours=2)
    with open_store(pooled_url) as store:
        finished = store.task_create_many(
            [NewTask(topic="t", name="n") for _ in range(30)], now=old
        )
        for task in finished:
            store.task_cancel(task.id, now=old)
        store.task_create_many([NewTask(topic="t", name="n") for _ in range(3)])
        lost = store.task_reserve(ReserveParams(owner="gone", limit=3, lease_seconds=1, now=old))
        clock = FakeClock()
        scheduler = Scheduler(store, "s", retention=3600.0, prune_every=1.0, clock=clock)
        reports = []
        for _ in range(10):
            reports.append(scheduler.run_once())
            clock.advance(scheduler.interval)
    assert all(report.leader and not report.failed_steps for report in reports)
    assert len(lost) == 3
    assert sum(len(report.revoked) for report in reports) == 3
    assert sum(report.pruned_tasks for report in reports) == 30


def test_serve_answers_through_it(pooled_url: str, direct: Store) -> None:
    server = WorkerProcess(
        pooled_url, "--port", "0", "--insecure", command="serve",
        app="tests.apps.api:app", ready="HTTP API of",
    )  # fmt: skip
    try:
        found = server.wait_for_log("HTTP API of").split("http://", 1)[1].split("/api")[0]
        base = f"http://{found}/api"
        for i in range(12):
            body = json.dumps({"name": "add", "args": [i, 1]}).encode()
            posted = urllib.request.Request(f"{base}/tasks", data=body, method="POST")
            posted.add_header("Content-Type", "application/json")
            with urllib.request.urlopen(posted, timeout=10) as answer:
                assert answer.status == 201
            with urllib.request.urlopen(f"{base}/tasks?limit=50", timeout=10) as answer:
                assert len(json.load(answer)["tasks"]) == i + 1
            with urllib.request.urlopen(f"{base}/stats", timeout=10) as answer:
                assert answer.status == 200
    finally:
        server.stop()
    assert count(direct) == 12
    assert not [line for line in server.lines if "ERROR" in line], "\n".join(server.lines)


def tenure(*argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tenure", *argv]
    return subprocess.run(
        command, check=False, cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_the_cli_migrates_and_lists_through_it(bouncer: PgBouncer) -> None:
    with own_database("tenure_pgbouncer") as blank:
        url = bouncer.url(blank)
        migrated = tenure("migrate", "--url", url)
        assert migrated.returncode == 0, migrated.stderr
        assert "0001_initial" in migrated.stdout + migrated.stderr
        with open_store(url) as store:
            store.task_create_many([NewTask(topic="t", name="listed") for _ in range(7)])
        for _ in range(3):
            listed = tenure("tasks", "--url", url)
            assert listed.returncode == 0, listed.stderr
            assert listed.stdout.count("listed") == 7
        again = tenure("migrate", "--url", f"{url}?listen={quote(blank, safe='')}")
        assert again.returncode == 0, again.stderr


def test_a_bad_listen_url_is_refused_in_one_line(pooled_url: str) -> None:
    with pytest.raises(ConfigError, match="listen= is not a PostgreSQL URL"):
        open_store(f"{pooled_url}?listen=mysql://x@y/z")
    refused = tenure("tasks", "--url", f"{pooled_url}?listen=")
    assert refused.returncode != 0
    assert refused.stderr.strip().count("\n") == 0, refused.stderr
    assert "listen= is empty" in refused.stderr


def show_jit(conn: Any) -> str:
    return str(conn.execute("SHOW jit").fetchone()[0])


def test_jit_is_off_for_tenures_statements_and_for_no_one_else(
    pooled_url: str, postgres_url: str
) -> None:
    """A direct session turns JIT compiling off for itself; through a pooler,
    whose server sessions other clients borrow, only a reservation's own
    transaction does (see session.sql)."""
    with open_store(pooled_url) as through, open_store(postgres_url) as straight:
        pooled, direct = cast(PostgresStore, through), cast(PostgresStore, straight)
        with direct._connection() as conn:
            assert show_jit(conn) == "off"
        with pooled._connection() as conn:
            assert show_jit(conn) == "on"  # the server's default, left as it was
            with pooled._without_jit(conn):
                assert show_jit(conn) == "off"
            assert show_jit(conn) == "on"
