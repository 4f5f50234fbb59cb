"""The two dialects name each operation's query alike: one name from the Store
method to the SQL, in SQLite and in PostgreSQL.

A query that exists in one dialect only is either a real difference between
the two databases, listed below with the reason, or a name that drifted: this
test tells the two apart, so a reader who finds ``complete_tasks`` in one
``queries.sql`` finds it in the other.
"""

from __future__ import annotations

import pytest

from tenure.store.backend import Backend
from tenure.store.base import Store
from tenure.store.sqlfile import load_queries

SQLITE = set(load_queries("tenure.store.sqlite"))
POSTGRES = set(load_queries("tenure.store.postgres"))

SQLITE_ONLY = {
    "prune_gates": "PostgreSQL deletes the settled gates in prune_tasks' own statement "
    "(a data-modifying CTE); SQLite runs it as a second statement of the same transaction",
    "built_objects": "a new SQLite file gets the schema the migrations end with, built "
    "in memory and copied (so no old name is ever made beside an application's tables); "
    "PostgreSQL makes its objects in a schema of their own",
    "built_columns": "see built_objects",
    "literal": "see built_objects: the rows the migrations seed, written as literals",
    "begin_write": "a write takes SQLite's one write lock at its start (BEGIN IMMEDIATE), "
    "which also serializes migrations; a PostgreSQL write is one autocommit statement or "
    "a psycopg transaction block",
    "commit": "ends begin_write's transaction; a PostgreSQL transaction is a psycopg block",
    "savepoint": "a batch on a caller's sqlite3 connection runs under a savepoint; "
    "psycopg's conn.transaction() makes PostgreSQL's",
    "rollback_to_savepoint": "see savepoint",
    "release_savepoint": "see savepoint",
    "use_wal": "a setting of the SQLite file, made per connection; PostgreSQL's are the server's",
    "synchronous_full": "PRAGMA values cannot be bound: one query per allowed setting",
    "synchronous_normal": "see synchronous_full",
    "synchronous_extra": "see synchronous_full",
    "synchronous_off": "a private :memory: store, whose file outlives nothing",
    "refuse_unique_start": "SQLite settles a task refused at start by its unique lock from "
    "Python, in the reserving transaction; PostgreSQL does it in the tasks_unique trigger",
    "data_version": "SQLite sends no notifications: task_wait watches the change counter "
    "and then looks for a runnable task; PostgreSQL LISTENs instead",
    "runnable_any": "see data_version",
    "runnable_topics": "see data_version",
    "journal_mode": "database_settings reads SQLite's two PRAGMAs, which cannot be one "
    "statement; PostgreSQL's settings are rows of pg_settings",
    "synchronous": "see journal_mode",
    "mark_events_pruned": "SQLite's DELETE ... RETURNING cannot feed another statement, so "
    "the newest event pruned is recorded by a second statement; PostgreSQL's prune_events "
    "records it in the same statement",
}

POSTGRES_ONLY = {
    "schema_state": "PostgreSQL keeps tenure in a schema of its own; SQLite prefixes its "
    "names (a file has no schemas to speak of)",
    "create_schema": "see schema_state",
    "migration_search_path": "see schema_state",
    "applied_in_public": "see schema_state: the move of an install made before the schema",
    "move_from_public": "see applied_in_public",
    "session_search_path": "see schema_state: Django's migrations go on after tenure's SQL",
    "restore_search_path": "see session_search_path",
    "get_tasks": "a PostgreSQL batch is one statement, so its misses are read at once; "
    "SQLite runs a batch item by item and reads each miss with get_task",
    "clock_now": "the store's clock is the server's on PostgreSQL, the process's on SQLite",
    "stale_statistics": "statistics_refresh ANALYZEs where autovacuum is off; SQLite's "
    "reserve names its index (INDEXED BY) instead of trusting statistics",
    "analyze_tasks": "see stale_statistics",
    "analyze_events": "see stale_statistics",
    "listen": "wake-ups by LISTEN/NOTIFY; SQLite watches data_version",
    "copy_tasks": "a large batch is streamed by COPY on PostgreSQL; SQLite inserts row by "
    "row in one transaction, with no parse of a batch to save",
    "transaction_now": "see copy_tasks: the rows COPY streams are stamped with the "
    "transaction's clock, read first",
    "insert_one": "PostgreSQL inserts a batch as one statement over a JSON array, and a "
    "single task with its values bound one by one; SQLite's insert_task is one task's already",
    "listen_events": "see listen",
    "fold_task_counts": "PostgreSQL keeps tallies (appended by its triggers, folded by the "
    "scheduler) so stats need not count millions of rows; SQLite counts its table when asked",
    "fold_task_transitions": "see fold_task_counts",
    "compact_task_transitions": "see fold_task_counts",
    "read_only_snapshot": "task_stats reads its three statements in one snapshot; SQLite's "
    "are each read on their own (one writer at a time, and nothing waits on them)",
    "lock_migrations": "processes migrating at once take turns on an advisory lock; SQLite's "
    "migrations hold the write lock (begin_write)",
    "read_committed": "a migration in a transaction Django opened sets the isolation "
    "PostgreSQL's migrations need; SQLite's transactions are serializable whatever is set",
    "without_jit": "task_groups turns off PostgreSQL's JIT compilation, which costs more than "
    "it saves there; SQLite compiles nothing",
    "wake_want": "PostgreSQL's triggers notify only while an idle waiter is registered (a "
    "NOTIFY serialises commits); SQLite's waiters watch data_version, which costs no writer",
    "wake_lock": "see wake_want",
    "wake_lock_timeout": "see wake_want",
    "wake_tidy": "see wake_want",
    "wake_drop": "see wake_want",
    "database_settings": "see journal_mode",
    "table_keys": "a publication needs a key per row on PostgreSQL; SQLite's copies (of the "
    "file, or of its pages) need none, and it has no schemas: both answer empty there",
}


def test_a_query_in_one_dialect_only_is_a_listed_difference() -> None:
    unexplained = {
        "only in sqlite/queries.sql": sorted(SQLITE - POSTGRES - set(SQLITE_ONLY)),
        "only in postgres/queries.sql": sorted(POSTGRES - SQLITE - set(POSTGRES_ONLY)),
    }
    assert unexplained == {
        "only in sqlite/queries.sql": [],
        "only in postgres/queries.sql": [],
    }, (
        "give the operation's query the same name in both dialects, or list it in "
        "SQLITE_ONLY / POSTGRES_ONLY of this test with the reason"
    )


@pytest.mark.parametrize(
    ("listed", "present", "absent"),
    [(SQLITE_ONLY, SQLITE, POSTGRES), (POSTGRES_ONLY, POSTGRES, SQLITE)],
    ids=["sqlite", "postgres"],
)
def test_every_listed_difference_is_still_one(
    listed: dict[str, str], present: set[str], absent: set[str]
) -> None:
    stale = sorted(name for name in listed if name not in present or name in absent)
    assert stale == [], "no longer a difference: remove it from the list"
    assert all(reason.strip() for reason in listed.values())


def test_a_batch_answers_briefly_in_both_dialects() -> None:
    brief = {name for name in SQLITE | POSTGRES if name.endswith("_brief")}
    batches = {"extend_leases_brief", "complete_tasks_brief", "fail_tasks_brief"}
    # Progress answers briefly only: a task reporting it needs no payload back.
    assert brief == batches | {"progress_task_brief"}
    assert all(name.removesuffix("_brief") in SQLITE & POSTGRES for name in batches)
    assert brief <= SQLITE & POSTGRES


NAMED_APART = {
    "_admin_transition": "serves task_cancel and task_retry",
    "_task_complete_in": "serves task_complete given a caller's connection",
}


def test_each_backend_method_is_named_for_the_store_method_it_serves() -> None:
    abstract = sorted(Backend.__abstractmethods__)
    unmatched = [
        name
        for name in abstract
        if name not in NAMED_APART and not callable(getattr(Store, name[1:], None))
    ]
    assert abstract and unmatched == []
