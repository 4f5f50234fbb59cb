"""tenure's own schema on PostgreSQL (migration 0016): an install made before
it, in ``public``, is moved in place by the next store to open it, with its
tasks pending, running and done, none lost or run twice; ``tenure migrate
--sql`` shows a DBA the move first; and two stores in two schemas of one
database never see each other's tasks.
"""

from __future__ import annotations

import re
import subprocess

import psycopg
import pytest

from tenure import Status
from tenure.store import NewTask, ReserveParams
from tenure.store.migrate import migration_sql, pending_migrations
from tenure.store.postgres.backend import PostgresStore
from tests.conformance.support import lease_of
from tests.integration.test_postgres_tallies import INSERT_TASK, apply_up_to
from tests.unit.test_pieces import TENURE_TABLES


def with_query(url: str, query: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{query}"


def public_tables(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        found = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
        ).fetchall()
    return [name for (name,) in found]


def test_an_install_in_public_moves_with_its_tasks_pending_running_and_done(
    blank_postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = blank_postgres_url
    apply_up_to(url, 15)  # the schema of every version before 0016, in public
    with psycopg.connect(url, autocommit=True) as conn:
        for task_id in ("a", "b", "c", "d"):
            conn.execute(INSERT_TASK, [task_id])  # as that version's statements wrote them
        conn.execute("CREATE TABLE public.orders (id bigint PRIMARY KEY)")  # the app's own
        conn.execute("INSERT INTO public.orders VALUES (1)")
    with PostgresStore(with_query(url, "schema=public")) as pinned:  # a process pinned there
        assert pinned.migrations_applied[0] == 16  # and those after it
        running, finished = pinned.task_reserve(ReserveParams(owner="old", limit=2))
        pinned.task_complete(lease_of(finished, "old"), "before the move")
    assert pending_migrations(url) == []  # every version is there: only the move is due
    assert "SET SCHEMA" in migration_sql(url)

    with PostgresStore(url) as moved:  # the default schema: the move runs at open
        assert moved.migrations_applied == []  # every version is recorded; only moved
        said = [r.getMessage() for r in caplog.records if r.name == "tenure.store"]
        assert any("moved from schema public into schema tenure" in line for line in said)
        assert moved.task_get(finished.id).status is Status.DONE
        # The lease taken before the move is still the one that finishes its task.
        assert moved.task_complete(lease_of(running, "old"), "after the move").status is Status.DONE
        taken = moved.task_reserve(ReserveParams(owner="new", limit=10))
        assert sorted(t.id for t in taken) == ["c", "d"]  # each pending task once
        for task in taken:
            moved.task_complete(lease_of(task, "new"), None)
        assert moved.task_reserve(ReserveParams(owner="new", limit=10)) == []
        ended = [e for e in moved.event_list(limit=100) if e.to_status is Status.DONE]
        assert sorted(e.task_id for e in ended) == ["a", "b", "c", "d"]  # one ending each
        history = [(e.from_status, e.to_status) for e in moved.task_events("a")]
        assert history[0] == (None, Status.PENDING)  # its history moved with it
        moved.task_create(NewTask(topic="t", name="n"))  # the triggers fire in the schema
    # public keeps the application's table, and the copy of the ledger that stops
    # an older version from making new tables beside the moved ones.
    assert public_tables(url) == ["orders", "tenure_migrations"]
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM public.orders").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM tenure.tasks").fetchone() == (5,)


def test_the_script_for_a_dba_shows_the_move_and_does_it(blank_postgres_url: str) -> None:
    url = blank_postgres_url
    apply_up_to(url, 15)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(INSERT_TASK, ["kept"])
    script = migration_sql(url)
    assert "ALTER TABLE public.%I SET SCHEMA %I" in script
    assert "-- 0016_own_schema.sql" in script
    assert "tasks" in public_tables(url)  # shown, not run
    subprocess.run(
        ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url],
        input=script,
        text=True,
        check=True,
        capture_output=True,
    )
    assert pending_migrations(url) == []
    with PostgresStore(url, migrate=False) as store:
        assert store.task_get("kept").status is Status.PENDING


def test_two_schemas_of_one_database_hold_two_stores_apart(blank_postgres_url: str) -> None:
    jobs_url = with_query(blank_postgres_url, "schema=jobs")
    with PostgresStore(blank_postgres_url) as default, PostgresStore(jobs_url) as jobs:
        made = jobs.task_create(NewTask(topic="t", name="n"))
        assert default.task_reserve(ReserveParams(owner="w", limit=10)) == []
        assert [t.id for t in jobs.task_reserve(ReserveParams(owner="w", limit=10))] == [made.id]
        assert default.task_count() == 0 and jobs.task_count() == 1


@pytest.mark.parametrize("schema", ["Jobs", "pg_toast", "a-b"])
def test_a_schema_that_is_not_a_plain_name_is_refused_before_connecting(
    blank_postgres_url: str, schema: str
) -> None:
    from tenure import ConfigError

    with pytest.raises(ConfigError, match="plain lower-case SQL name"):
        PostgresStore(with_query(blank_postgres_url, f"schema={schema}"))


def test_every_function_names_tenures_tables_with_their_schema(blank_postgres_url: str) -> None:
    """A trigger fires in whatever session writes the row, and a PL/pgSQL body
    looks its names up on that session's search path: every name of tenure's
    in a body carries the schema, and no function sets a search path of its
    own (which would cost every call a setting saved and restored)."""
    with PostgresStore(with_query(blank_postgres_url, "schema=jobs")):
        pass
    bare = re.compile(
        rf"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+({TENURE_TABLES})\b|[^.\w](tenure_\w+)\("
    )
    with psycopg.connect(blank_postgres_url) as conn:
        found = conn.execute(
            "SELECT p.proname, p.prosrc, p.proconfig FROM pg_proc AS p"
            " WHERE p.pronamespace = 'jobs'::regnamespace ORDER BY 1"
        ).fetchall()
    assert len(found) == 16
    assert {name: bare.findall(source) for name, source, _ in found if bare.search(source)} == {}
    assert [name for name, _, config in found if config is not None] == []
    with psycopg.connect(blank_postgres_url, autocommit=True) as conn:  # public's path
        conn.execute(
            "INSERT INTO jobs.tasks (id, topic, name, status, data, created_at, updated_at)"
            " VALUES ('from-an-app', 't', 'n', 'pending', 'null', now(), now())"
        )
    with PostgresStore(with_query(blank_postgres_url, "schema=jobs")) as store:
        assert [e.task_id for e in store.task_events("from-an-app")] == ["from-an-app"]
