"""PostgreSQL's tallies beyond the conformance suite: TRUNCATE empties the
counts (not the history), the migration that fills them misses no write
committed meanwhile whatever the default isolation, and a fold with nothing
to fold writes nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tenure import Status
from tenure.store import NewTask
from tenure.store.postgres import schema
from tenure.store.postgres.backend import PostgresStore
from tenure.store.sqlfile import migrations
from tests.conformance.support import reach
from tests.conftest import _empty_postgres
from tests.integration.test_postgres_housekeeping import with_setting


@pytest.fixture
def url(postgres_url: str) -> str:
    _empty_postgres(postgres_url)
    return postgres_url


@pytest.fixture
def store(url: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(url)
    yield opened
    opened.close()


def test_truncating_tasks_empties_the_counts_and_keeps_the_totals(
    store: PostgresStore, url: str
) -> None:
    reach(store, Status.DONE)
    store.task_create(NewTask(topic="t", name="n"))
    store.tally_fold()
    store.task_create(NewTask(topic="t", name="n"))  # a delta row not folded yet
    totals = store.task_transition_totals()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("TRUNCATE tenure.tasks")
    assert store.task_stats().counts == {}
    assert store.task_transition_totals() == totals  # history, not the tasks there are
    store.task_create(NewTask(topic="t", name="n"))
    store.tally_fold()
    assert store.task_stats().counts == {"t": {Status.PENDING: 1}}


LEGACY_LEDGER = """
CREATE TABLE IF NOT EXISTS public.tenure_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""
"""The ledger as versions before 0016 made it, in public."""


def apply_up_to(url: str, last: int) -> None:
    """Migrate a blank database as far as version ``last`` (before 0016) as the
    versions of those days did: in public, where the next store to open it
    finds an install to move into tenure's schema before migrating it on."""
    assert last < 16, "from 0016 on, tenure lives in its own schema"
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute(schema.queries()["lock_migrations"])
        conn.execute(LEGACY_LEDGER)
        for version, name, sql in migrations(schema.PACKAGE):
            if version <= last:
                conn.execute(sql)
                conn.execute(
                    "INSERT INTO public.tenure_migrations (version, name) VALUES (%s, %s)",
                    [version, name],
                )


INSERT_TASK = (
    "INSERT INTO public.tasks (id, topic, name, status, data, created_at, updated_at)"
    " VALUES (%s, 't', 'n', 'pending', 'null', now(), now())"
)
"""A task written into an install of before 0016 (see :func:`apply_up_to`)."""


def waiting_on_a_lock(conn: psycopg.Connection[Any], application: str) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE application_name = %s AND wait_event_type = 'Lock'",
        [application],
    ).fetchone()
    return row is not None and row[0] > 0


@pytest.mark.parametrize("isolation", ["repeatable read", "serializable"])
def test_the_tallies_filled_by_a_migration_miss_no_write_committed_meanwhile(
    blank_postgres_url: str, isolation: str
) -> None:
    """0008 fills task_counts from the tasks once its triggers' lock keeps
    writers out. A writer that committed while the migration waited for that
    lock is counted, also where transactions default to a snapshot taken at
    their start (which would predate that commit)."""
    apply_up_to(blank_postgres_url, 7)
    with psycopg.connect(blank_postgres_url, autocommit=True) as conn:
        conn.execute(INSERT_TASK, ["before"])
    migrating_url = with_setting(blank_postgres_url, "default_transaction_isolation", isolation)
    application = "tenure-migrate-under-test"
    migrating_url += "&application_name=" + application
    errors: list[BaseException] = []

    def migrate() -> None:
        try:
            schema.migrate(migrating_url)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    with (
        psycopg.connect(blank_postgres_url) as writer,
        psycopg.connect(blank_postgres_url, autocommit=True) as watcher,
    ):
        writer.execute(INSERT_TASK, ["meanwhile"])  # holds its lock on tasks, uncommitted
        migrating = threading.Thread(target=migrate)
        migrating.start()
        deadline = time.monotonic() + 30
        while not waiting_on_a_lock(watcher, application):
            assert time.monotonic() < deadline, "the migration never waited for the writer"
            time.sleep(0.01)
        writer.commit()
        migrating.join(timeout=60)
    assert not migrating.is_alive() and errors == []
    with psycopg.connect(blank_postgres_url) as conn:
        counted = conn.execute(
            "SELECT topic, status, sum(n) FROM tenure.task_counts GROUP BY 1, 2"
        ).fetchall()
        counting = "SELECT topic, status, count(*) FROM tenure.tasks GROUP BY 1, 2"
        there = conn.execute(counting).fetchall()
    assert counted == there == [("t", "pending", 2)]


def test_a_fold_with_nothing_to_fold_writes_nothing(store: PostgresStore, url: str) -> None:
    for status in (Status.DONE, Status.FAILED, Status.PENDING):
        reach(store, status)
    store.tally_fold()

    def rows() -> list[tuple[Any, ...]]:
        with psycopg.connect(url) as conn:
            found = conn.execute(
                "SELECT ctid::text, topic, status, n FROM tenure.task_counts ORDER BY topic, status"
            )
            return found.fetchall()

    folded = rows()
    assert len(folded) == 3  # one row per key (topic, status)
    store.tally_fold()
    assert rows() == folded  # the same rows, where they were: none rewritten
    store.task_create(NewTask(topic="reach-pending", name="n"))
    store.tally_fold()
    after = rows()
    changed = [row for row in after if row not in folded]
    assert [row[1:] for row in changed] == [("reach-pending", "pending", 2)]
