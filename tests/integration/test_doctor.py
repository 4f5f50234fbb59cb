"""``tenure doctor`` on real stores: each finding seen once its condition is
made, and none on a store set up as it should be.

PostgreSQL's cases run on a private server of this module's (PostgreSQL's
defaults, as a server should be set up): the doctor reads the server's settings,
and the suite's shared server need not be one (the test machines' runs with
autovacuum off, which the doctor reports). Each case gets a database of its
own there: they change its settings, its tables and its schema.
"""

from __future__ import annotations

import importlib.util
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tenure import App, Lease, Store, Unique, open_store
from tenure.cli import main
from tenure.maintenance.doctor import (
    SILENT_LEASES,
    Subject,
    check_scheduler,
    check_sqlite_durability,
    check_unique_ttl,
    diagnose,
)
from tenure.maintenance.leader import SCHEDULER
from tenure.store import NewTask, ReserveParams
from tenure.store.types import WorkerInfo
from tests.conftest import _require_postgres
from tests.integration.workers import wait_for

if TYPE_CHECKING:
    from chaos.cluster import PrivateCluster

HOUR = 3600.0


@pytest.fixture(scope="module")
def server() -> Iterator[PrivateCluster]:
    """This module's PostgreSQL server, with PostgreSQL's default settings,
    removed afterwards. Without Debian's postgresql-15 binaries (or psycopg)
    its tests are skipped, or fail where PostgreSQL is required
    (``TENURE_REQUIRE_POSTGRES=1``, as in CI)."""
    from chaos.cluster import ClusterUnavailable, PrivateCluster

    try:
        if importlib.util.find_spec("psycopg") is None:
            raise ClusterUnavailable("psycopg is not installed: pip install 'tenure[postgres]'")
        cluster = PrivateCluster()
    except ClusterUnavailable as exc:
        if _require_postgres():
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(str(exc))
    with cluster:
        yield cluster


@pytest.fixture
def pg_url(server: PrivateCluster) -> str:
    """A blank database of this test's own on the module's server."""
    return server.create_database(f"doctor_{uuid.uuid4().hex[:12]}")


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated store set up as it should be: a scheduler alive and, on
    PostgreSQL, every table replicable and the database tenure's own."""
    made = (
        f"sqlite:///{tmp_path / 'doctor.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    with open_store(made) as store:
        healthy(store, made)
    return made


def healthy(store: Store, url: str) -> None:
    """A scheduler's leadership kept now, and (until every table of tenure's
    has a key) the others given a replica identity, as the fix says."""
    store.leader_acquire(SCHEDULER, "scheduler-1", 300.0)
    unkeyed = [table for table in store.table_keys() if not table.replicable]
    if unkeyed:
        sql(url, *(f"ALTER TABLE {t.schema}.{t.name} REPLICA IDENTITY FULL" for t in unkeyed))


def sql(url: str, *statements: str) -> None:
    import psycopg

    # tenure's tables by their names alone: its schema first on the search path
    with psycopg.connect(url, autocommit=True, options="-c search_path=tenure") as conn:
        for statement in statements:
            conn.execute(statement)


def doctor(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, dict[str, Any]]:
    """``tenure doctor --json`` on ``url``: its exit code and what it printed."""
    code = main(["--url", url, "doctor", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def codes(report: dict[str, Any]) -> list[str]:
    return [finding["code"] for finding in report["findings"]]


def test_a_store_set_up_as_it_should_be_finds_nothing(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = doctor(capsys, url)
    assert (code, report["findings"], report["unchecked"]) == (0, [], [])
    assert report["clean"] is True
    assert {"schema", "scheduler", "retention", "leases"} <= set(report["checks"])
    assert main(["--url", url, "doctor"]) == 0
    assert capsys.readouterr().out.startswith("nothing found: ")


def test_a_schema_out_of_date_is_reported_and_left_as_it_is(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sql_of = (
        "DELETE FROM tenure_migrations WHERE version = (SELECT max(version) FROM tenure_migrations)"
    )
    if url.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.execute(sql_of)
    else:
        sql(url, sql_of)
    code, report = doctor(capsys, url)
    assert (code, codes(report)) == (1, ["schema-out-of-date"])
    assert "tenure migrate" in report["findings"][0]["fix"]
    code, report = doctor(capsys, url)  # the doctor applied nothing
    assert codes(report) == ["schema-out-of-date"]


def test_no_scheduler_alive_is_reported_vacant_or_silent(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(url) as store:
        state = store.leader_get(SCHEDULER)
        assert state is not None
        store.leader_revoke(SCHEDULER, state.record_ver)  # the leader gone, none took over
        code, report = doctor(capsys, url)
        assert (code, codes(report)) == (1, ["no-scheduler"])
        assert "snoozed tasks never wake" in report["findings"][0]["what"]
        lease = store.leader_acquire(SCHEDULER, "scheduler-2", 0.05)  # then silent
        assert lease is not None
        silent = SILENT_LEASES * 0.05
        wait_for(lambda: (store.leader_silence(SCHEDULER) or 0.0) > silent, "two silent leases")
        assert [f.code for f in check_scheduler(Subject(url, store))] == ["no-scheduler"]
        store.leader_extend(lease, 300.0)  # kept again
        assert check_scheduler(Subject(url, store)) == []


def test_retention_falling_behind_is_reported(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    two_hours_ago = datetime.now(UTC) - timedelta(hours=2)
    with open_store(url) as store:
        store.task_create(NewTask(topic="t", name="recent"))
        assert doctor(capsys, url, "--retention", str(HOUR))[0] == 0
        old = store.task_create(NewTask(topic="t", name="old"), now=two_hours_ago)
        store.task_cancel(old.id, now=two_hours_ago)
    code, report = doctor(capsys, url, "--retention", str(HOUR))
    assert (code, codes(report)) == (1, ["retention-behind"])
    assert "1 finished tasks and 2 events" in report["findings"][0]["what"]
    assert doctor(capsys, url, "--retention", str(3 * HOUR))[0] == 0


def test_a_lease_shorter_than_the_p99_run_time_of_a_task_name_is_reported(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(url) as store:
        for name, seconds, lease in (("long", 20.0, 5.0), ("short", 1.0, 5.0)):
            store.task_create(NewTask(topic="t", name=name))
            [task] = store.task_reserve(ReserveParams(owner="w", lease_seconds=lease))
            assert task.started_at is not None and task.lease_token is not None
            done_at = task.started_at + timedelta(seconds=seconds)
            store.task_complete(Lease(task.id, "w", task.lease_token), None, now=done_at)
    code, report = doctor(capsys, url)
    assert (code, codes(report)) == (1, ["lease-below-p99"])
    assert "task long:" in report["findings"][0]["what"]
    assert "--lease 40" in report["findings"][0]["fix"]


def test_a_unique_lock_shorter_than_its_task_s_timeout_is_reported(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = doctor(capsys, url, "--app", "tests.apps.doctor:app")
    assert (code, codes(report)) == (1, ["timeout-over-unique-ttl"])
    assert "outlives_its_lock" in report["findings"][0]["what"]
    assert "unique-ttl" in report["checks"]
    code, report = doctor(capsys, url)  # without the App: not checked, not a fault
    assert code == 0 and "unique-ttl" in [s["check"] for s in report["skipped"]]


def test_the_app_s_default_ttl_counts_where_the_task_gives_none(tmp_path: Path) -> None:
    app = App(url=f"sqlite:///{tmp_path / 'app.db'}", unique_ttl=100.0)

    @app.task(timeout=60.0, unique=Unique(lock="while_executing"))
    def fits() -> None: ...

    assert check_unique_ttl(Subject(app.url, None, app.registry)) == []
    app.unique_ttl = 50.0
    assert len(check_unique_ttl(Subject(app.url, None, app.registry))) == 1


def test_sqlite_below_full_or_out_of_wal_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'doctor.db'}"
    with open_store(url) as store:
        healthy(store, url)
    code, report = doctor(capsys, url + "?synchronous=normal")
    assert (code, codes(report)) == (1, ["sqlite-synchronous"])
    with open_store(url) as store:
        with store._use() as conn:  # type: ignore[attr-defined]  # the store's own connection
            assert conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
        found = diagnose(Subject(url, store), [check_sqlite_durability]).findings
        assert [f.code for f in found] == ["sqlite-not-wal"]


def test_postgres_with_synchronous_commit_off_is_reported(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(pg_url) as store:
        healthy(store, pg_url)
    dbname = pg_url.rsplit("/", 1)[1]
    sql(pg_url, f'ALTER DATABASE "{dbname}" SET synchronous_commit = off')
    code, report = doctor(capsys, pg_url)
    assert (code, codes(report)) == (1, ["postgres-synchronous-commit-off"])


def test_postgres_with_fsync_off_is_reported(
    server: PrivateCluster, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """fsync is the server's alone: the module's server is set so, for a while."""
    with open_store(pg_url) as store:
        healthy(store, pg_url)
    with server_setting(server, "fsync", "off"):
        code, report = doctor(capsys, pg_url)
    assert (code, codes(report)) == (1, ["postgres-fsync-off"])


def test_postgres_with_autovacuum_off_is_reported_until_its_fix_is_applied(
    server: PrivateCluster, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """autovacuum is the server's: the module's server is turned off, then on
    again with the statements the finding gives."""
    with open_store(pg_url) as store:
        healthy(store, pg_url)
    assert doctor(capsys, pg_url)[0] == 0  # PostgreSQL's default: on
    with server_setting(server, "autovacuum", "off"):
        code, report = doctor(capsys, pg_url)
        assert (code, codes(report)) == (1, ["postgres-autovacuum-off"])
        assert "tables grow without end" in report["findings"][0]["what"]
        fix = report["findings"][0]["fix"]
        assert fix.startswith("turn autovacuum on (") and fix.endswith(")")
        sql(server.url(), *fix.removeprefix("turn autovacuum on (").removesuffix(")").split("; "))
        reloaded(server, "autovacuum", "on")
        assert doctor(capsys, pg_url)[0] == 0


@contextmanager
def server_setting(server: PrivateCluster, name: str, value: str) -> Iterator[None]:
    """The module's server with ``name`` set to ``value`` (ALTER SYSTEM, as a
    DBA would), put back afterwards whatever happens: the module's other tests
    expect PostgreSQL's defaults."""
    before = shown(server, name)
    try:
        sql(server.url(), f"ALTER SYSTEM SET {name} = {value}", "SELECT pg_reload_conf()")
        reloaded(server, name, value)
        yield
    finally:
        sql(server.url(), f"ALTER SYSTEM RESET {name}", "SELECT pg_reload_conf()")
        reloaded(server, name, before)


def reloaded(server: PrivateCluster, name: str, value: str) -> None:
    """Wait until a new session sees ``name`` at ``value``: pg_reload_conf()
    only signals the server, which rereads its configuration a moment later.
    Every session started after one that sees it sees it too."""
    wait_for(lambda: shown(server, name) == value, f"the server to reload with {name}={value}")


def shown(server: PrivateCluster, name: str) -> str:
    """``SHOW name`` in a new session of the server."""
    import psycopg

    with psycopg.connect(server.url()) as conn:
        row = conn.execute(f"SHOW {name}").fetchone()
    assert row is not None
    return str(row[0])


def test_tenure_s_tables_with_autovacuum_disabled_are_reported(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(pg_url) as store:
        healthy(store, pg_url)
    sql(
        pg_url,
        "ALTER TABLE tasks SET (autovacuum_enabled = off)",
        "ALTER TABLE events SET (fillfactor = 90, autovacuum_enabled = false)",
        "ALTER TABLE workers SET (autovacuum_enabled = on)",  # said, but not disabled
    )
    code, report = doctor(capsys, pg_url)
    assert (code, codes(report)) == (1, ["postgres-autovacuum-off"])
    [finding] = report["findings"]
    assert "table(s) tenure.events, tenure.tasks (" in finding["what"]
    sql(pg_url, *finding["fix"].split("; "))  # the fix it gives
    assert doctor(capsys, pg_url)[0] == 0


def test_workers_whose_pools_exceed_the_server_s_connections_are_reported(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(pg_url) as store:
        healthy(store, pg_url)
        each = store.connections_at_most
        settings = store.database_settings()
        assert each is not None
        room = int(settings["max_connections"]) - int(settings["superuser_reserved_connections"])
        fits = (room - 10) // each

        def beat(count: int) -> None:
            for n in range(count):
                store.worker_beat(WorkerInfo(id=f"w-{n}", host="h", pid=n))

        beat(fits)
        assert doctor(capsys, pg_url)[0] == 0
        beat(fits + 1)
    code, report = doctor(capsys, pg_url)
    assert (code, codes(report)) == (1, ["connections"])
    assert f"{fits + 1} live workers" in report["findings"][0]["what"]


def test_a_table_without_a_primary_key_is_reported(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(pg_url) as store:
        healthy(store, pg_url)
    sql(pg_url, "ALTER TABLE workers DROP CONSTRAINT workers_pkey")
    code, report = doctor(capsys, pg_url)
    assert (code, codes(report)) == (1, ["no-primary-key"])
    assert "tenure.workers" in report["findings"][0]["what"]
    sql(pg_url, "ALTER TABLE tenure.workers REPLICA IDENTITY FULL")  # the fix it gives
    assert doctor(capsys, pg_url)[0] == 0


def test_tenure_s_tables_in_public_are_reported_until_they_move(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pinned = f"{pg_url}?schema=public"
    with open_store(pinned) as store:
        healthy(store, pinned)
    code, report = doctor(capsys, pinned)
    assert (code, codes(report)) == (1, ["public-schema"])
    assert "schema=public" in report["findings"][0]["fix"]
    with open_store(pg_url) as store:  # the fix: the default schema; the move runs at open
        healthy(store, pg_url)
    assert doctor(capsys, pg_url)[0] == 0


def test_a_check_that_cannot_run_is_reported_and_the_others_still_run(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(pg_url) as store:
        healthy(store, pg_url)
    sql(pg_url, "ALTER TABLE leaders RENAME TO leaders_elsewhere")
    code, report = doctor(capsys, pg_url)
    assert code == 1 and report["clean"] is False
    assert [u["check"] for u in report["unchecked"]] == ["scheduler"]
    assert 'relation "tenure.leaders" does not exist' in report["unchecked"][0]["error"]
    assert "retention" in report["checks"] and "connections" in report["checks"]
    assert main(["--url", pg_url, "doctor"]) == 1
    assert "unchecked scheduler: " in capsys.readouterr().out


def test_a_mistake_in_the_command_is_one_line_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'doctor.db'}"
    assert main(["--url", url, "doctor", "--retention", "soon"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--retention" in err
