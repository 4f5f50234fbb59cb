"""Opening a PostgreSQL store that cannot work says so at once, in one line.

A closed port, a server that never answers, a database or role that does not
exist: each is one tenure error naming host, port and database, raised within
the opening timeout (at once when the server refused), and psycopg_pool has
nothing to log, since no pool is made before the first connection succeeds.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from tenure import ConfigError, StoreUnavailable
from tenure.store import open_store
from tenure.store.migrate import migrate_store, migration_sql
from tenure.store.postgres import schema
from tenure.store.postgres.driver import connect_error
from tests.conftest import _with_database

SECRET = "not-for-the-log"


def free_port() -> int:
    """A local port nobody listens on (the kernel's pick, released at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port whose connections are accepted by the kernel and never answered:
    a server that hangs, or a firewall that swallows the handshake."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield int(sock.getsockname()[1])


@pytest.fixture
def psycopg_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every record psycopg (and psycopg.pool) logs at WARNING or above."""
    caplog.set_level(logging.WARNING, logger="psycopg")
    return caplog


@pytest.fixture
def server(postgres_url: str) -> tuple[str, str]:
    """``host:port`` of the test server, as its own connection reports them,
    and the URL of the run's database on it."""
    with psycopg.connect(postgres_url) as conn:
        return f"{conn.info.host}:{conn.info.port}", postgres_url


def said_once(exc: BaseException) -> str:
    message = str(exc)
    assert "\n" not in message
    assert SECRET not in message
    return message


def pool_records(log: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in log.records if record.name.startswith("psycopg")]


def test_a_closed_port_fails_at_once_in_one_line(psycopg_log: pytest.LogCaptureFixture) -> None:
    port = free_port()
    start = time.monotonic()
    with pytest.raises(StoreUnavailable) as raised:
        open_store(f"postgresql://tenure:{SECRET}@127.0.0.1:{port}/tenure")
    assert time.monotonic() - start < 5
    assert said_once(raised.value) == (
        f'cannot reach PostgreSQL at 127.0.0.1:{port} (database "tenure"): connection refused'
    )
    assert pool_records(psycopg_log) == []


def test_a_server_that_never_answers_is_given_the_timeout_asked_for(
    silent_server: int, psycopg_log: pytest.LogCaptureFixture
) -> None:
    start = time.monotonic()
    with pytest.raises(StoreUnavailable) as raised:
        open_store(f"postgresql://postgres@127.0.0.1:{silent_server}/tenure", connect_timeout=2)
    assert 1.5 < time.monotonic() - start < 4
    assert said_once(raised.value) == (
        f"cannot reach PostgreSQL at 127.0.0.1:{silent_server} (database"
        ' "tenure"): no answer within 2 s'
    )
    assert pool_records(psycopg_log) == []


@pytest.mark.slow
def test_by_default_opening_waits_five_seconds_for_an_answer(
    silent_server: int, psycopg_log: pytest.LogCaptureFixture
) -> None:
    start = time.monotonic()
    with pytest.raises(StoreUnavailable, match="no answer within 5 s"):
        open_store(f"postgresql://postgres@127.0.0.1:{silent_server}/tenure")
    assert 4.5 < time.monotonic() - start < 6.5
    assert pool_records(psycopg_log) == []


def test_an_unknown_database_is_a_config_error_at_once(
    server: tuple[str, str], psycopg_log: pytest.LogCaptureFixture
) -> None:
    where, url = server
    name = f"tenure_missing_{uuid.uuid4().hex[:8]}"
    for migrate in (True, False):
        start = time.monotonic()
        with pytest.raises(ConfigError) as raised:
            open_store(_with_database(url, name), migrate=migrate)
        assert time.monotonic() - start < 1
        assert said_once(raised.value) == f'PostgreSQL at {where} has no database "{name}"'
    assert pool_records(psycopg_log) == []


def test_an_unknown_role_is_a_config_error_at_once(server: tuple[str, str]) -> None:
    where, url = server
    with psycopg.connect(url) as conn:
        database = conn.info.dbname
    role = f"tenure_nobody_{uuid.uuid4().hex[:8]}"
    url = f"postgresql://{role}:{SECRET}@{where}/{database}"
    start = time.monotonic()
    with pytest.raises(ConfigError) as raised:
        open_store(url)
    assert time.monotonic() - start < 1
    assert said_once(raised.value) == (
        f'PostgreSQL at {where} has no role "{role}" (database "{database}")'
    )


def test_tenure_migrate_fails_as_fast(server: tuple[str, str]) -> None:
    _, url = server
    with pytest.raises(ConfigError, match="has no database"):
        schema.migrate(_with_database(url, "tenure_missing_for_migrate"))
    with pytest.raises(StoreUnavailable, match="connection refused"):
        schema.migrate(f"postgresql://postgres@127.0.0.1:{free_port()}/tenure")
    with pytest.raises(ConfigError, match="has no database"):
        migrate_store(_with_database(url, "tenure_missing_for_migrate"), connect_timeout=2)
    with pytest.raises(StoreUnavailable, match="connection refused"):
        migration_sql(f"postgresql://postgres@127.0.0.1:{free_port()}/tenure")


def test_an_unparsable_dsn_never_quotes_its_password() -> None:
    with pytest.raises(ConfigError) as raised:
        open_store("host=db password=my secretpart dbname=jobs")
    assert "secretpart" not in str(raised.value) and "invalid PostgreSQL URL" in str(raised.value)


def test_a_setting_libpq_rejects_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as raised:
        open_store(f"postgresql://postgres:{SECRET}@127.0.0.1:99999/tenure")
    assert said_once(raised.value) == 'invalid PostgreSQL URL: invalid port number: "99999"'


# Refusals this test server (trust authentication) cannot produce, as libpq words
# them: permanent ones are ConfigError, a server turning sessions away for now is
# StoreUnavailable (a worker waiting for its database retries only those).
REFUSED = 'connection failed: connection to server at "db.internal", port 6432 failed: FATAL:  '


@pytest.mark.parametrize(
    ("server_says", "kind", "message"),
    [
        (
            'password authentication failed for user "app"',
            ConfigError,
            'PostgreSQL at db.internal:6432 refused the password of user "app" (database "jobs")',
        ),
        (
            'no pg_hba.conf entry for host "10.0.0.9", user "app", database "jobs", no encryption',
            ConfigError,
            'PostgreSQL at db.internal:6432 refused the connection (database "jobs"): '
            'no pg_hba.conf entry for host "10.0.0.9", user "app", database "jobs", no encryption',
        ),
        (
            "the database system is starting up",
            StoreUnavailable,
            'PostgreSQL at db.internal:6432 (database "jobs") refused the connection: '
            "the database system is starting up",
        ),
        (  # ALTER DATABASE ... ALLOW_CONNECTIONS false: maintenance, for a while
            'database "jobs" is not currently accepting connections',
            StoreUnavailable,
            'PostgreSQL at db.internal:6432 (database "jobs") refused the connection: '
            'database "jobs" is not currently accepting connections',
        ),
        (
            "sorry, too many clients already",
            StoreUnavailable,
            'PostgreSQL at db.internal:6432 (database "jobs") refused the connection: '
            "sorry, too many clients already",
        ),
    ],
)
def test_refusals_are_sorted_into_permanent_and_passing(
    server_says: str, kind: type[Exception], message: str
) -> None:
    url = f"postgresql://app:{SECRET}@db.internal:6432/jobs"
    error = connect_error(psycopg.OperationalError(REFUSED + server_says), url)
    assert type(error) is kind
    assert said_once(error) == message
