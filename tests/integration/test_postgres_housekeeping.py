"""Housekeeping on PostgreSQL beyond the conformance suite: leadership races
under every isolation level, pruning beside concurrent writers, the server's
clock in UTC whatever the session's time zone, and the 0002 schema's rules."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

from tenure import Status, StoreError
from tenure.store import NewTask
from tenure.store.postgres import statements
from tenure.store.postgres.backend import ACQUIRE_ATTEMPTS, PostgresStore
from tenure.store.types import WorkerInfo
from tests.conftest import _empty_postgres

RACERS = 8
NAMES = 40


@pytest.fixture
def url(postgres_url: str) -> str:
    _empty_postgres(postgres_url)
    return postgres_url


@pytest.fixture
def store(url: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(url)
    yield opened
    opened.close()


def with_setting(url: str, name: str, value: str) -> str:
    """``url`` whose sessions start with ``SET name = value``."""
    option = quote(f"-c {name}=" + value.replace(" ", "\\ "))
    return f"{url}{'&' if '?' in url else '?'}options={option}"


# -- leadership races ------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["read committed", "repeatable read", "serializable"])
def test_racers_on_new_names_elect_exactly_one_each(url: str, isolation: str) -> None:
    """Every racer asks for the same new name at once: one wins, the others get
    None, none gets an error, whatever the database's default isolation."""
    racing_url = with_setting(url, "default_transaction_isolation", isolation)
    stores = [PostgresStore(racing_url, pool_min=1, pool_max=1) for _ in range(RACERS)]
    barrier = threading.Barrier(RACERS)
    wins: Counter[str] = Counter()
    errors: list[BaseException] = []

    def race(index: int) -> None:
        try:
            for n in range(NAMES):
                barrier.wait(timeout=30)
                if stores[index].leader_acquire(f"race-{n}", f"p{index}", 10) is not None:
                    wins[f"race-{n}"] += 1
        except threading.BrokenBarrierError:
            pass  # another racer failed, and says why
        except Exception as exc:
            errors.append(exc)
            barrier.abort()  # the other racers stop instead of waiting for this one

    try:
        with ThreadPoolExecutor(RACERS) as pool:
            for done in [pool.submit(race, i) for i in range(RACERS)]:
                done.result(timeout=120)
    finally:
        for opened in stores:
            opened.close()
    assert errors == []
    assert wins == Counter({f"race-{n}": 1 for n in range(NAMES)})


def unique_violation_of_leaders(url: str) -> psycopg.Error:
    """A real unique violation of the leaders' key, as the server reports it."""
    with psycopg.connect(url, autocommit=True) as conn:
        insert = (
            "INSERT INTO tenure.leaders (name, owner, token, record_ver, lease_seconds, updated_at)"
            " VALUES ('dup', NULL, NULL, 1, 1, now())"
        )
        conn.execute(insert)
        try:
            conn.execute(insert)
        except psycopg.errors.UniqueViolation as exc:
            conn.execute("DELETE FROM tenure.leaders WHERE name = 'dup'")
            return exc
    raise AssertionError("no unique violation")


def failing_first(monkeypatch: pytest.MonkeyPatch, error: psycopg.Error, times: int) -> list[str]:
    """Make the first ``times`` leader_acquire statements raise ``error``."""
    real = statements.Statements.fetch
    calls: list[str] = []

    def fetch(
        self: statements.Statements,
        conn: statements.Connection,
        query: str,
        params: dict[str, Any],
    ) -> Any:
        calls.append(query)
        if query == "leader_acquire" and calls.count(query) <= times:
            raise error
        return real(self, conn, query, params)

    monkeypatch.setattr(statements.Statements, "fetch", fetch)  # what the backend calls
    return calls


def test_an_acquire_that_lost_a_race_is_run_again(
    store: PostgresStore, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = store.leader_acquire("s", "winner", 10)
    assert held is not None
    calls = failing_first(monkeypatch, unique_violation_of_leaders(url), 1)
    assert store.leader_acquire("s", "loser", 10) is None  # finds the winner's row
    assert store.leader_acquire("t", "first", 10) is not None
    assert calls.count("leader_acquire") == 3


def test_an_acquire_losing_every_time_reports_a_store_error(
    store: PostgresStore, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = failing_first(monkeypatch, unique_violation_of_leaders(url), ACQUIRE_ATTEMPTS)
    with pytest.raises(StoreError):
        store.leader_acquire("s", "a", 10)
    assert calls.count("leader_acquire") == ACQUIRE_ATTEMPTS


def test_other_unique_violations_are_not_run_again(
    store: PostgresStore, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.task_create(NewTask(topic="t", name="n", id="same"))
    with (
        psycopg.connect(url, autocommit=True) as conn,
        pytest.raises(psycopg.errors.UniqueViolation) as raised,
    ):
        conn.execute(
            "INSERT INTO tenure.tasks (id, topic, name, status, data, run_at, created_at,"
            " updated_at) VALUES ('same', 't', 'n', 'pending', 'null', now(), now(), now())"
        )
    calls = failing_first(monkeypatch, raised.value, 1)
    with pytest.raises(StoreError):
        store.leader_acquire("s", "a", 10)
    assert calls.count("leader_acquire") == 1


# -- retention beside concurrent writers ------------------------------------------


def test_prune_skips_a_task_being_retried_and_never_deletes_it(
    store: PostgresStore, url: str
) -> None:
    old = datetime.now(UTC) - timedelta(hours=2)
    tasks = store.task_create_many([NewTask(topic="t", name="n") for _ in range(3)], now=old)
    for task in tasks:
        store.task_cancel(task.id, now=old)
    with psycopg.connect(url) as retrying:  # a retry, not committed yet
        retrying.execute(
            "UPDATE tenure.tasks SET status = 'pending', finished_at = NULL,"
            " record_ver = record_ver + 1 WHERE id = %s",
            [tasks[0].id],
        )
        with ThreadPoolExecutor(1) as pool:  # does not wait for the retry
            assert pool.submit(store.task_prune, 3600).result(timeout=10) == 2
        retrying.commit()
    assert store.task_prune(3600) == 0
    left = store.task_get(tasks[0].id)
    assert left is not None and left.status is Status.PENDING


def test_concurrent_pruners_share_the_work(store: PostgresStore) -> None:
    old = datetime.now(UTC) - timedelta(hours=2)
    tasks = store.task_create_many([NewTask(topic="t", name="n") for _ in range(200)], now=old)
    for task in tasks:
        store.task_cancel(task.id, now=old)
    with ThreadPoolExecutor(4) as pool:
        counts = list(pool.map(lambda _: store.task_prune(3600, limit=30), range(10)))
    assert sum(counts) == 200
    assert store.task_count() == 0
    assert store.event_prune(3600, limit=10_000) == 400  # created and cancelled
    assert store.event_list() == []


# -- the clock ---------------------------------------------------------------------


def test_times_are_the_servers_in_utc_whatever_the_sessions_time_zone(url: str) -> None:
    tokyo = PostgresStore(with_setting(url, "TimeZone", "Asia/Tokyo"))
    try:
        now = tokyo.clock_now()
        beat = tokyo.worker_beat(WorkerInfo(id="w", host="h", pid=1))
    finally:
        tokyo.close()
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT clock_timestamp()").fetchone()
    assert row is not None
    assert now.tzinfo is UTC and beat.last_seen is not None and beat.last_seen.tzinfo is UTC
    assert timedelta(0) <= row[0] - now < timedelta(seconds=5)
    assert beat.started_at == beat.last_seen
    assert timedelta(0) <= beat.last_seen - now < timedelta(seconds=5)


def test_clock_now_advances_within_one_session(url: str) -> None:
    single = PostgresStore(url, pool_min=1, pool_max=1)
    try:
        first, second = single.clock_now(), single.clock_now()
    finally:
        single.close()
    assert second > first


# -- the worker registry -------------------------------------------------------------


def test_workers_beating_at_once_keep_one_row_and_its_first_start(store: PostgresStore) -> None:
    start = datetime(2030, 1, 1, tzinfo=UTC)
    store.worker_beat(WorkerInfo(id="w", host="h", pid=1), now=start)

    def beat(i: int) -> WorkerInfo:
        info = WorkerInfo(id="w", host="h", pid=1, held=i % 3)
        return store.worker_beat(info, now=start + timedelta(seconds=i))

    with ThreadPoolExecutor(8) as pool:
        beats = list(pool.map(beat, range(1, 41)))
    assert {b.started_at for b in beats} == {start}
    [listed] = store.worker_list()
    assert listed.started_at == start


# -- the schema ------------------------------------------------------------------------


def test_a_leadership_has_an_owner_if_and_only_if_it_has_a_token(
    store: PostgresStore, url: str
) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for owner, token in (("a", None), (None, 1)):
            with pytest.raises(psycopg.errors.CheckViolation):
                conn.execute(
                    "INSERT INTO tenure.leaders (name, owner, token, record_ver, lease_seconds,"
                    " updated_at) VALUES ('x', %s, %s, 1, 1, now())",
                    [owner, token],
                )


def test_retention_indexes_exist(store: PostgresStore, url: str) -> None:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes"
            " WHERE indexname IN ('tasks_finished', 'events_by_time')"
        ).fetchall()
    found: dict[str, str] = dict(rows)
    assert set(found) == {"tasks_finished", "events_by_time"}
    assert "WHERE (status = ANY (ARRAY['done'::text, 'failed'::text" in found["tasks_finished"]
