"""Store URLs as users write them, what a start-up line shows of them, and the
migration report and script that ``tenure migrate`` gives, against real
databases (a throwaway PostgreSQL database, a SQLite file)."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
from psycopg import conninfo

from tenure import ConfigError
from tenure.store import NewTask, open_store
from tenure.store.migrate import migrate_store, migration_sql, pending_migrations
from tenure.store.sqlfile import migrations
from tenure.store.sqlite import schema as sqlite_schema
from tenure.store.url import describe_url, parse_url, redact
from tests.conftest import POSTGRES_URL

POSTGRES_NAMES = [f"{v:04d}_{n}" for v, n, _ in migrations("tenure.store.postgres")]
SQLITE_NAMES = [f"{v:04d}_{n}" for v, n, _ in migrations("tenure.store.sqlite")]


def keyword_form(url: str) -> str:
    """``url`` as a libpq keyword string (``host=… port=… dbname=… user=…``)."""
    return conninfo.make_conninfo("", **conninfo.conninfo_to_dict(url))


def round_trip(url: str) -> None:
    """Open ``url``, write a task and read it back."""
    store = open_store(url)
    try:
        task = store.task_create(NewTask(topic="urls", name="n"))
        assert store.task_get(task.id) == task
    finally:
        store.close()


# -- URL forms ------------------------------------------------------------------------


def test_a_sqlalchemy_style_url_opens_a_working_store(blank_postgres_url: str) -> None:
    sqlalchemy_url = blank_postgres_url.replace("postgresql://", "postgresql+psycopg://", 1)
    assert sqlalchemy_url.startswith("postgresql+psycopg://")
    assert parse_url(sqlalchemy_url) == ("postgresql", blank_postgres_url)
    round_trip(sqlalchemy_url)


def test_a_keyword_string_opens_a_working_store(blank_postgres_url: str) -> None:
    keywords = keyword_form(blank_postgres_url)
    assert "dbname=" in keywords and "://" not in keywords
    round_trip(keywords)


def test_the_local_server_by_both_new_forms(postgres_url: str) -> None:
    """The forms as a user types them (not migrating: the server's own
    ``postgres`` database is not this test's to change)."""
    if conninfo.conninfo_to_dict(POSTGRES_URL).get("host") != "127.0.0.1":
        pytest.skip("the test server is not the local one")
    for url in (
        "postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
        "host=127.0.0.1 port=5432 dbname=postgres user=postgres",
    ):
        open_store(url, migrate=False).close()


def test_a_sqlalchemy_style_sqlite_url_is_the_same_file(tmp_path: Path) -> None:
    round_trip(f"sqlite+pysqlite:///{tmp_path / 'tenure.db'}")
    assert (tmp_path / "tenure.db").exists()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("tenure.db", "not a store URL: 'tenure.db'"),
        ("mysql://u:secret@h/db", "unknown store URL scheme 'mysql' in mysql://u:***@h/db"),
        ("host=127.0.0.1 port", 'invalid PostgreSQL URL: missing "=" after "port"'),
        (
            "postgresql://u@127.0.0.1:abc/db",
            'invalid PostgreSQL URL: invalid integer value "abc" for connection option "port"',
        ),
        ("sqlite://host/x.db", "a SQLite URL is sqlite:///relative.db"),
    ],
)
def test_a_bad_url_is_one_line_of_config_error(url: str, says: str) -> None:
    with pytest.raises(ConfigError) as raised:
        open_store(url)
    assert str(raised.value).startswith(says)
    assert "\n" not in str(raised.value) and "secret" not in str(raised.value)


# -- what a start-up line shows -----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://app:s3cret@db:5432/jobs", "postgresql://app:***@db:5432/jobs"),
        ("postgresql+psycopg://app:s3cret@db/jobs", "postgresql+psycopg://app:***@db/jobs"),
        ("postgresql://app@db/jobs?password=s3cret&sslmode=require", None),
        ("host=db port=5432 dbname=jobs user=app password=s3cret", None),
        ("host=db dbname=jobs password='s3 cret' user=app", None),
        ("postgresql://app@db/jobs", "postgresql://app@db/jobs"),
        ("sqlite:////var/lib/tenure/jobs.db", "sqlite:////var/lib/tenure/jobs.db"),
    ],
)
def test_describe_url_hides_every_password(url: str, shown: str | None) -> None:
    described = describe_url(url)
    assert "s3" not in described and "cret" not in described
    assert "***" in described or "s3cret" not in url
    if shown is not None:
        assert described == shown
    assert redact(url) == described or url.startswith("sqlite")


def test_describe_url_makes_a_sqlite_path_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert describe_url("sqlite:///tenure.db") == f"sqlite:///{tmp_path}/tenure.db"
    assert describe_url("sqlite:///tenure.db").startswith("sqlite:////")
    assert describe_url("sqlite:///data/t.db?synchronous=normal") == (
        f"sqlite:///{tmp_path}/data/t.db?synchronous=normal"
    )
    monkeypatch.delenv("TENURE_URL", raising=False)
    assert describe_url() == f"sqlite:///{tmp_path}/tenure.db"  # the default store
    monkeypatch.setenv("TENURE_URL", "postgresql://u:pw@h/db")
    assert describe_url(None) == "postgresql://u:***@h/db"


# -- the migration report and script -----------------------------------------------------


def test_migrate_reports_what_it_applied_on_postgres(blank_postgres_url: str) -> None:
    assert pending_migrations(blank_postgres_url) == POSTGRES_NAMES
    assert migrate_store(blank_postgres_url) == POSTGRES_NAMES
    assert migrate_store(blank_postgres_url) == []  # up to date: nothing to say
    assert pending_migrations(blank_postgres_url) == []
    assert POSTGRES_NAMES[0] == "0001_initial"


def test_migrate_reports_what_it_applied_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tenure.db'}"
    assert pending_migrations(url) == SQLITE_NAMES
    assert not (tmp_path / "tenure.db").exists()  # looking created nothing
    assert migrate_store(url) == SQLITE_NAMES
    assert migrate_store(url) == []
    assert pending_migrations(url) == []


def in_order(script: str, package: str) -> list[str]:
    """Each migration file's SQL, checked to appear in ``script`` in order under
    a comment naming the file; the names found."""
    found, at = [], -1
    every = migrations(package)
    if package == "tenure.store.postgres":
        from tenure.store.postgres.schema import migration_files

        every = migration_files()  # as the script has them: the schema's name spliced in
    for version, name, sql in every:
        header = script.find(f"-- {version:04d}_{name}.sql\n")
        if header < 0:
            continue
        body = script.find(sql.strip(), header)
        assert body > header > at
        at = body
        found.append(f"{version:04d}_{name}")
    return found


def test_migration_sql_of_a_fresh_postgres_database_runs_as_a_dba_would(
    blank_postgres_url: str,
) -> None:
    script = migration_sql(blank_postgres_url)
    assert in_order(script, "tenure.store.postgres") == POSTGRES_NAMES
    assert script == migration_sql(blank_postgres_url, pending=False)
    with psycopg.connect(blank_postgres_url, autocommit=True) as dba:
        dba.execute(script)  # BEGIN … COMMIT of its own
    assert migration_sql(blank_postgres_url) == ""
    assert migrate_store(blank_postgres_url) == []  # the script recorded what it applied
    round_trip(blank_postgres_url)


def test_migration_sql_holds_only_what_is_missing(blank_postgres_url: str) -> None:
    migrate_store(blank_postgres_url)
    with psycopg.connect(blank_postgres_url, autocommit=True) as conn:
        conn.execute("DELETE FROM tenure.tenure_migrations WHERE version >= 3")
    assert pending_migrations(blank_postgres_url) == POSTGRES_NAMES[2:]
    assert (
        in_order(migration_sql(blank_postgres_url), "tenure.store.postgres") == POSTGRES_NAMES[2:]
    )


def test_migration_sql_of_a_new_sqlite_file_runs_as_is(tmp_path: Path) -> None:
    """A new file's script is the schema the migrations end with, made at once
    (tenure.store.sqlite.schema.built), recording every one of them."""
    url = f"sqlite:///{tmp_path / 'tenure.db'}"
    script = migration_sql(url)
    assert in_order(script, "tenure.store.sqlite") == []  # no migration's file as it is
    assert script.count("INSERT INTO tenure_migrations") == len(SQLITE_NAMES)
    assert ", ".join(SQLITE_NAMES) in script
    assert timeless(script) == timeless(migration_sql(url, pending=False))
    with sqlite3.connect(tmp_path / "tenure.db") as conn:
        conn.executescript(script)
    conn.close()
    assert migration_sql(url) == ""
    assert migrate_store(url) == []
    round_trip(url)


def timeless(script: str) -> str:
    """``script`` without the time it records its migrations as applied at
    (where two scripts written one after the other differ)."""
    recorded = r"(INSERT INTO tenure_migrations .* VALUES \(\d+, '\w+', )[^)]+\)"
    return re.sub(recorded, r"\1…)", script)


def test_migration_sql_of_a_sqlite_file_of_an_older_version_holds_what_it_lacks(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tenure.db"
    url = f"sqlite:///{path}"
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.executescript(sqlite_schema.script(done=set(range(4, len(SQLITE_NAMES) + 1))))
    assert pending_migrations(url) == SQLITE_NAMES[3:]
    script = migration_sql(url)
    assert in_order(script, "tenure.store.sqlite") == SQLITE_NAMES[3:]
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.executescript(script)
    assert migrate_store(url) == []
    round_trip(url)
