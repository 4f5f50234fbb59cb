"""Fixtures shared by every test: one ``store`` fixture over every backend.

PostgreSQL tests use ``$TENURE_TEST_POSTGRES_URL`` (default: the local server).
A fresh database is created for the run and dropped afterwards; each test starts
from empty tables. Without a reachable server those tests are skipped with one
line of reason, unless ``TENURE_REQUIRE_POSTGRES=1`` (CI sets it), which turns
the skip into a failure.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tenure.store import Store, open_store

if TYPE_CHECKING:
    import psycopg

POSTGRES_URL = os.environ.get(
    "TENURE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
BACKENDS = ["sqlite", "postgres"]

StoreFactory = Callable[..., Store]


def _require_postgres() -> bool:
    return os.environ.get("TENURE_REQUIRE_POSTGRES") == "1"


def _with_database(url: str, dbname: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + dbname))


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A URL to a fresh database on the test server, dropped after the run."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - dev extras install it
        pytest.fail("psycopg is not installed") if _require_postgres() else pytest.skip(
            "psycopg not installed"
        )
    dbname = f"tenure_test_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        reason = f"PostgreSQL unreachable at {POSTGRES_URL}: {str(exc).strip().splitlines()[0]}"
        if _require_postgres():
            pytest.fail(reason)
        pytest.skip(reason)
    with admin:
        admin.execute(f'CREATE DATABASE "{dbname}"')
    url = _with_database(POSTGRES_URL, dbname)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(APPLICATION_TABLES)
    try:
        yield url
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


APPLICATION_TABLES = """
CREATE TABLE public.tasks (id serial PRIMARY KEY, title text NOT NULL, done boolean);
CREATE TABLE public.events (id serial PRIMARY KEY, name text NOT NULL);
INSERT INTO public.tasks (title, done) VALUES ('an application row', false);
INSERT INTO public.events (name) VALUES ('an application row');
"""
"""An application's own tables, in the run's database, named as tenure's are in
its schema: every test runs beside them, so a statement of tenure's that
named a table without its schema would find these and fail."""


@contextmanager
def own_database(prefix: str) -> Iterator[str]:
    """The URL of a new, blank database on the test server, dropped afterwards."""
    import psycopg

    dbname = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{dbname}"')
    try:
        yield _with_database(POSTGRES_URL, dbname)
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


RUN_VARIABLE = "TENURE_TEST_RUN"
"""Names what the processes of one run of the suite share: set by the first
process, inherited by the xdist processes it starts."""
SHARED_PREFIX = "tenure_shared_"


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(RUN_VARIABLE, uuid.uuid4().hex[:12])


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The first process drops the run's shared databases, once every process
    is done with them."""
    if hasattr(session.config, "workerinput"):
        return
    import psycopg

    pattern = f"{SHARED_PREFIX}{os.environ[RUN_VARIABLE]}_%"
    try:
        with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5) as admin:
            found = admin.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s", [pattern]
            ).fetchall()
            for (dbname,) in found:
                admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
    except psycopg.OperationalError:
        pass  # no server: nothing was made


def shared_database(name: str, fill: Callable[[str], None]) -> str:
    """The URL of a database every process of this run shares, made and filled
    (``fill(url)``) by the first to ask while the others wait, dropped when the
    run ends: for what many tests only read and is long to make."""
    import psycopg

    dbname = f"{SHARED_PREFIX}{os.environ[RUN_VARIABLE]}_{name}"
    making = f"{dbname}_making"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute("SELECT pg_advisory_lock(hashtext(%s))", [dbname])
        try:
            if not admin.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [dbname]
            ).fetchone():
                admin.execute(f'DROP DATABASE IF EXISTS "{making}" WITH (FORCE)')
                admin.execute(f'CREATE DATABASE "{making}"')
                fill(_with_database(POSTGRES_URL, making))
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                    [making],
                )
                admin.execute(f'ALTER DATABASE "{making}" RENAME TO "{dbname}"')
        finally:
            admin.execute("SELECT pg_advisory_unlock(hashtext(%s))", [dbname])
    return _with_database(POSTGRES_URL, dbname)


@pytest.fixture
def blank_postgres_url(postgres_url: str) -> Iterator[str]:
    """A database of its own with nothing in it (the run's shared one is
    migrated), dropped afterwards: for migrations, schema dumps and outages."""
    with own_database("tenure_blank") as url:
        yield url


@pytest.fixture
def postgres_store(postgres_url: str) -> Iterator[Store]:
    """The run's PostgreSQL store, emptied, for tests of that backend alone."""
    _empty_postgres(postgres_url)
    with open_store(postgres_url) as opened:
        yield opened


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The name of the backend under test."""
    return str(request.param)


@pytest.fixture
def store_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A URL to an empty store of the backend under test."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'tenure.db'}"
    url: str = request.getfixturevalue("postgres_url")
    _empty_postgres(url)
    return url


_EMPTYING: dict[str, tuple[str, str]] = {}
"""Per database URL: the statements that empty it by DELETE, and by TRUNCATE."""


def _empty_postgres(url: str, *, truncate: bool = False) -> None:
    """Migrate (once) and empty every table, so each test starts clean: rows
    deleted (TRUNCATE makes new files for every table and index, 25 times
    slower on the few rows a test leaves) and identities restarted, in one
    round trip. Tests of query plans ask for ``truncate``: deleted rows stay
    in the indexes until vacuumed, and a million of them are better not
    deleted one by one."""
    import psycopg

    if url not in _EMPTYING:
        open_store(url).close()  # applies migrations
        with psycopg.connect(url, autocommit=True) as conn:
            _EMPTYING[url] = _emptying(conn)
    deleting, truncating = _EMPTYING[url]
    with psycopg.connect(url) as conn:
        conn.execute(truncating if truncate else deleting)


def _emptying(conn: psycopg.Connection[Any]) -> tuple[str, str]:
    tables = [
        name
        for (name,) in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'tenure'"
            " AND tablename <> 'tenure_migrations' ORDER BY tablename <> 'tasks', tablename"
        )
    ]  # tasks first: its DELETE trigger writes tallies, deleted after it
    identities = conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = 'tenure' AND is_identity = 'YES'"
    ).fetchall()
    deleting = [f'DELETE FROM tenure."{table}"' for table in tables]
    deleting += [f'ALTER TABLE tenure."{t}" ALTER COLUMN "{c}" RESTART' for t, c in identities]
    listed = ", ".join(f'tenure."{table}"' for table in tables)
    return "; ".join(deleting), f"TRUNCATE {listed} RESTART IDENTITY"


@pytest.fixture
def make_store(store_url: str) -> Iterator[StoreFactory]:
    """Opens stores on the test URL (several, for concurrency tests); closes them all."""
    opened: list[Store] = []

    def factory(**options: object) -> Store:
        store = open_store(store_url, **options)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> Store:
    """An empty store of the backend under test."""
    return make_store()
