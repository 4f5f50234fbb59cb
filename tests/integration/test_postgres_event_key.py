"""Migration 0013 keys the event log by (xid, id): events written under the
old key are kept, listed in the cursor's order after the upgrade, and pruned by
the new key."""

from __future__ import annotations

from datetime import timedelta

import psycopg

from tenure.store import NewTask
from tenure.store.postgres.backend import PostgresStore
from tests.integration.test_postgres_tallies import INSERT_TASK, apply_up_to


def test_events_written_before_the_new_key_are_listed_and_pruned_after_it(
    blank_postgres_url: str,
) -> None:
    apply_up_to(blank_postgres_url, 12)
    with psycopg.connect(blank_postgres_url, autocommit=True) as conn:
        for task_id in ("first", "second"):
            conn.execute(INSERT_TASK, [task_id])  # one transaction each, one event each
    store = PostgresStore(blank_postgres_url)  # applies 0013, and those after it
    try:
        assert store.migrations_applied[0] == 13
        before = store.event_list()
        assert [e.task_id for e in before] == ["first", "second"]
        third = store.task_create(NewTask(topic="t", name="n"))
        after = store.event_list(after=before[-1].cursor)
        assert [e.task_id for e in after] == [third.id]
        later = third.created_at + timedelta(hours=1)
        assert store.event_prune(60, now=later) == 3
        assert store.event_list() == []
    finally:
        store.close()
