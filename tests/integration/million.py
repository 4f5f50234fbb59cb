"""A PostgreSQL store holding 1,000,000 tasks, made in seconds: a thousand made
by the store in a mix of statuses, then copied 999 times by one INSERT (the
triggers see every row, so tallies and events are as a million enqueues would
leave them). The secondary indexes of the tasks and their events are dropped
for the copy and built again after it, from their own definitions: one sorted
build each instead of a million insertions, half the fill's time. Every copy
of a thousand is one group; descriptions differ per task; one rare topic holds
a single task, the oldest."""

from __future__ import annotations

import psycopg

from tenure import Status, Store
from tenure.store import NewTask
from tests.conformance.support import reach

RARE_TOPIC = "rare"
COPIES = 999


def fill_million(store: Store, url: str) -> None:
    """Fill ``store`` (empty, at ``url``) with 1,000,000 tasks."""
    store.task_create(NewTask(topic=RARE_TOPIC, name="n", description="the rare one"))
    for n in range(999):
        status = (Status.DONE, Status.FAILED, Status.PENDING, Status.CANCELLED)[n % 4]
        if status is Status.PENDING:
            store.task_create(NewTask(topic=f"t{n % 5}", name="n", description=f"order {n}"))
        else:
            reach(store, status, description=f"order {n}")
    with psycopg.connect(url, autocommit=True) as conn:
        columns = [
            row[0]
            for row in conn.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = 'tenure' AND table_name = 'tasks'"
                " AND column_name NOT IN ('seq', 'id', 'group_id', 'topic')"
                " ORDER BY ordinal_position"
            )
        ]
        listed = ", ".join(columns)
        rebuilt = _drop_secondary_indexes(conn)
        conn.execute(
            f"INSERT INTO tenure.tasks (id, group_id, topic, {listed})"
            " SELECT id || '-' || copy, 'batch-' || copy,"
            f" CASE WHEN topic = '{RARE_TOPIC}' THEN 't0' ELSE topic END, {listed}"
            f" FROM tenure.tasks CROSS JOIN generate_series(1, {COPIES}) AS copy ORDER BY copy, seq"
        )
        conn.execute("SET maintenance_work_mem = '256MB'")
        for definition in rebuilt:
            conn.execute(definition)
        conn.execute("VACUUM ANALYZE tenure.tasks")
        conn.execute("ANALYZE tenure.events")  # as autovacuum would soon
    store.tally_fold()


def _drop_secondary_indexes(conn: psycopg.Connection[tuple[str, ...]]) -> list[str]:
    """Drop the indexes of ``tasks`` and ``events`` that no constraint owns;
    the statements that create them again, as the schema defines them."""
    found = conn.execute(
        "SELECT i.indexname, i.indexdef FROM pg_indexes AS i"
        " WHERE i.schemaname = 'tenure' AND i.tablename IN ('tasks', 'events')"
        " AND NOT EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.conname = i.indexname)"
    ).fetchall()
    for name, _ in found:
        conn.execute(f'DROP INDEX tenure."{name}"')
    return [definition for _, definition in found]
