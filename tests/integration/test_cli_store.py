"""The command line against stores that are fine, missing or misconfigured: one
line each, the right exit code, and within the time promised."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tenure.cli import main
from tests.conftest import POSTGRES_URL
from tests.integration.test_postgres_failfast import free_port
from tests.integration.workers import WorkerProcess

UNREACHABLE = "postgresql://postgres@127.0.0.1:{port}/tenure"


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_migrate_says_what_it_applied_and_prints_sql_for_a_dba(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert main(["migrate", "--sql", "--url", url]) == 0
    script = capsys.readouterr().out
    assert "migrations 0001_initial, " in script and "CREATE TABLE" in script.upper()
    assert not (tmp_path / "fresh.db").exists()  # printing the SQL creates nothing
    assert main(["migrate", "--url", url]) == 0
    out = capsys.readouterr().out
    assert out.startswith("applied 0001_initial, ") and str(tmp_path / "fresh.db") in out
    assert main(["migrate", "--url", url]) == 0
    assert capsys.readouterr().out.strip().endswith("fresh.db is up to date")
    assert main(["migrate", "--sql", "--url", url]) == 0
    assert "up to date: nothing to run" in capsys.readouterr().out


def test_an_unreachable_postgres_is_one_line_naming_it_within_5_seconds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = free_port()
    for command in (["tasks"], ["workers"], ["show", "x"], ["migrate"], ["events"], ["report"]):
        began = time.monotonic()
        assert main(["--url", UNREACHABLE.format(port=port), *command]) == 1
        assert time.monotonic() - began < 5
        line = one_line(capsys)
        assert f'cannot reach PostgreSQL at 127.0.0.1:{port} (database "tenure")' in line


def test_a_missing_database_is_a_mistake_answered_at_once(
    capsys: pytest.CaptureFixture[str], postgres_url: str
) -> None:
    began = time.monotonic()
    assert main(["--url", f"{POSTGRES_URL.rsplit('/', 1)[0]}/no_such_db", "tasks"]) == 2
    assert time.monotonic() - began < 1
    assert 'has no database "no_such_db"' in one_line(capsys)


@pytest.mark.slow
def test_a_worker_waits_for_its_store_logging_each_attempt(tmp_path: Path) -> None:
    url = UNREACHABLE.format(port=free_port())
    worker = WorkerProcess(url, ready="retrying in 2s")  # two attempts, one line each
    attempts = [line for line in worker.lines if "cannot reach PostgreSQL" in line]
    assert [a.split("; ")[-1] for a in attempts] == ["retrying in 1s", "retrying in 2s"]
    assert " WARNING " in attempts[0] and not any("psycopg" in ln for ln in worker.lines)
    worker.signal(signal.SIGTERM)  # a stop while waiting for the store is a clean stop
    assert worker.wait_exit(10) == 0


@pytest.mark.slow
def test_a_worker_given_a_wrong_database_exits_with_one_line(postgres_url: str) -> None:
    url = f"{POSTGRES_URL.rsplit('/', 1)[0]}/no_such_db"
    worker = WorkerProcess(url, ready="error:")
    assert worker.wait_exit(10) == 2
    errors = [line for line in worker.lines if "error:" in line]
    server = urlsplit(POSTGRES_URL)
    where = f"{server.hostname}:{server.port or 5432}"
    assert errors == [f'error: PostgreSQL at {where} has no database "no_such_db"']
    assert not any("Traceback" in line for line in worker.lines)


def test_tenure_alone_prints_the_help_in_plain_words(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("usage: tenure") and "a durable task queue" in shown
    assert "``" not in shown  # plain text, not the reference's reStructuredText


def test_an_app_written_with_a_dot_for_the_colon_is_pointed_at(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'never.db'}"
    assert main(["periodic", "--app", "tests.apps.periodic.app", "--url", url]) == 2
    err = capsys.readouterr().err
    assert "did you mean tests.apps.periodic:app?" in err and "Traceback" not in err
    assert main(["periodic", "--app", "tests.apps.periodic.nothing", "--url", url]) == 2
    assert "did you mean" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "help_of"),
    [
        (["tasks", "--bogus"], "tenure tasks"),
        (["--url", "sqlite:///x.db", "tasks", "--bogus"], "tenure tasks"),
        (["periodic", "pause", "name", "--bogus"], "tenure periodic pause"),
        (["--bogus"], "tenure"),
    ],
)
def test_a_mistake_points_to_the_help_of_its_command(
    capsys: pytest.CaptureFixture[str], argv: list[str], help_of: str
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"(see {help_of} --help)" in err and len(err.strip().splitlines()) == 1


def test_help_shows_each_default_once_and_where_else_it_is_set(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["worker", "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    assert (
        "tasks run at once ($TENURE_CONCURRENCY, or concurrency in [tool.tenure]) (default: 4)"
        in shown
    )
    assert (
        "(default: None)" not in shown and shown.count("(default: those of the App's tasks)") == 1
    )
