"""The Django example project (examples/django_project) end to end: its own test
suite under Django's test runner, on PostgreSQL and on SQLite; ``manage.py
migrate`` creating tenure's tables through tenure's Django migrations;
``manage.py tenure_worker`` running what views committed (and only that), on
threads and on a process pool whose children set Django up, and stopping on
SIGTERM; ``manage.py tenure``. The
helpers here run every Django process as a subprocess (Django is set up once
per process, and each test needs settings of its own); test_django_settings.py
uses them too.

Like every PostgreSQL test, these are skipped without a server unless
``TENURE_REQUIRE_POSTGRES=1``, which makes that a failure (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tenure import Status, Store, open_store
from tenure.store import TaskFilter
from tests.conftest import POSTGRES_URL
from tests.integration.workers import ROOT, WorkerProcess, wait_for

pytestmark = pytest.mark.slow

EXAMPLE = ROOT / "examples" / "django_project"

RECEIPT = "orders.tasks.send_receipt"


def clean_environment(**extra: str) -> dict[str, str]:
    """This process's environment without tenure's or Django's own settings,
    and ``extra``."""
    kept = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("TENURE_", "DJANGO_", "EXAMPLE_"))
        or key == "TENURE_REQUIRE_POSTGRES"
    }
    return {**kept, "PYTHONPATH": str(ROOT), **extra}


def postgres_environment(dbname: str) -> dict[str, str]:
    """The example's environment for the database ``dbname`` of the test server."""
    params = conninfo_to_dict(POSTGRES_URL)

    def given(key: str, variable: str, default: str) -> str:
        return str(params.get(key) or os.environ.get(variable) or default)

    return clean_environment(
        EXAMPLE_DATABASE="postgresql",
        EXAMPLE_DB_NAME=dbname,
        PGHOST=given("host", "PGHOST", "127.0.0.1"),
        PGPORT=given("port", "PGPORT", "5432"),
        PGUSER=given("user", "PGUSER", "postgres"),
        PGPASSWORD=given("password", "PGPASSWORD", ""),
    )


def database_url(dbname: str) -> str:
    """A libpq URL of ``dbname`` on the test server."""
    params = {**conninfo_to_dict(POSTGRES_URL), "dbname": dbname}
    return make_conninfo("", **params)


@contextmanager
def own_database(prefix: str) -> Iterator[str]:
    """A database of the test's own on the test server (and its Django test
    database, if a run left one), dropped afterwards."""
    dbname = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{dbname}"')
    try:
        yield dbname
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            for name in (dbname, f"test_{dbname}"):
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_exists(dbname: str) -> bool:
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        found = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,))
        return found.fetchone() is not None


def manage(
    env: dict[str, str], *arguments: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python manage.py <arguments>`` in the example project."""
    return subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def shell(env: dict[str, str], code: str) -> Any:
    """Run ``code`` in ``manage.py shell`` and return what it printed last, as JSON."""
    done = manage(env, "shell", "--no-imports", "-c", code)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


class ManagedWorker(WorkerProcess):
    """``python manage.py tenure_worker <options>`` in the example project, its
    log lines collected as they come."""

    def __init__(self, env: dict[str, str], *options: str) -> None:
        argv = [sys.executable, "manage.py", "tenure_worker", "--poll", "0.05", *options]
        self.process = subprocess.Popen(
            argv,
            cwd=EXAMPLE,
            env=env,
            stdout=subprocess.DEVNULL,  # the console email backend's receipts
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self.lines: list[str] = []
        self._new_line = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.wait_for_log("started", timeout=60)


BOOT = """
import json, sys
import django
from django.conf import settings

settings.configure(**json.loads(sys.argv[1]))
try:
    django.setup()
    exec(sys.argv[2])
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}")
    sys.exit(3)
"""


def django_script(
    settings: dict[str, Any], code: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a process whose Django settings are ``settings`` (plus
    tenure's app) and whose environment has ``env``; an exception is printed as
    ``Name: message``, exit code 3."""
    full = {
        "INSTALLED_APPS": ["tenure.contrib.django"],
        "USE_TZ": True,
        **settings,
    }
    return subprocess.run(
        [sys.executable, "-c", BOOT, json.dumps(full), code],
        cwd=ROOT,
        env=clean_environment(**env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def sqlite_database(path: Path, **extra: Any) -> dict[str, Any]:
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path), **extra}


def postgres_database(dbname: str, **extra: Any) -> dict[str, Any]:
    params = conninfo_to_dict(POSTGRES_URL)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": dbname,
        "USER": params.get("user") or "postgres",
        "PASSWORD": params.get("password") or "",
        "HOST": params.get("host") or "127.0.0.1",
        "PORT": str(params.get("port") or 5432),
        **extra,
    }


PLACE_ORDERS = """
import json
from django.test import Client

client = Client(raise_request_exception=False)
def place(item):
    order = {"item": item, "quantity": 1, "email": "ada@example.com"}
    return client.post("/orders", order, content_type="application/json")

placed = place("lamp")
declined = place("declined-card")
failed = place("provider-down")
print(json.dumps({
    "placed": placed.json(),
    "statuses": [placed.status_code, declined.status_code, failed.status_code],
}))
"""


@pytest.fixture(scope="module")
def example_db(postgres_url: str) -> Iterator[str]:
    """The example's PostgreSQL database, migrated by ``manage.py migrate``.
    (``postgres_url`` first: it skips, or fails, when there is no server.)"""
    with own_database("tenure_django_example") as dbname:
        done = manage(postgres_environment(dbname), "migrate", "--no-input")
        assert done.returncode == 0, done.stderr
        assert "Applying tenure.0001_initial... OK" in done.stdout
        yield dbname


@pytest.fixture
def example_store(example_db: str) -> Iterator[Store]:
    with open_store(database_url(example_db)) as store:
        yield store


def test_the_example_suite_passes_on_postgresql(postgres_url: str) -> None:
    with own_database("tenure_django_suite") as dbname:
        done = manage(postgres_environment(dbname), "test", "--no-input")

        assert done.returncode == 0, done.stderr
        assert "Ran 13 tests" in done.stderr and "\nOK" in done.stderr
        # tenure let go of the test database, so Django could drop it.
        assert not database_exists(f"test_{dbname}")


def test_the_example_suite_passes_on_sqlite(tmp_path: Path) -> None:
    env = clean_environment(
        EXAMPLE_DATABASE="sqlite", EXAMPLE_SQLITE_PATH=str(tmp_path / "shop.sqlite3")
    )

    done = manage(env, "test", "--no-input")

    assert done.returncode == 0, done.stderr
    assert "Ran 13 tests" in done.stderr and "\nOK" in done.stderr
    assert list(tmp_path.iterdir()) == []  # no test database, and no -wal beside it


def test_migrate_creates_tenures_tables_once(example_db: str, example_store: Store) -> None:
    again = manage(postgres_environment(example_db), "migrate", "--no-input")

    assert again.returncode == 0, again.stderr
    assert "No migrations to apply." in again.stdout
    assert example_store.task_count() >= 0


@pytest.mark.parametrize("pool", ["threads", "processes"])
def test_the_worker_command_runs_what_views_committed(
    example_db: str, example_store: Store, pool: str
) -> None:
    env = postgres_environment(example_db)
    receipts = TaskFilter(name=RECEIPT)
    before = example_store.task_count(receipts)
    worker = ManagedWorker(env, "--pool", pool, "--concurrency", "2")
    try:
        assert f"pool={pool}" in worker.wait_for_log("started")

        result = shell(env, PLACE_ORDERS)

        assert result["statuses"] == [201, 402, 500]
        task_id = result["placed"]["receipt_task"]
        done = wait_for(
            lambda: (t := example_store.task_get(task_id)) and t.status is Status.DONE and t,
            "the receipt task to be done",
        )
        assert (
            done.result == f"receipt of order {result['placed']['order']} sent to ada@example.com"
        )
        sent = shell(
            env,
            "import json; from orders.models import Order; "
            f"print(json.dumps(Order.objects.get(pk={result['placed']['order']})"
            ".receipt_sent_at is not None))",
        )
        assert sent is True
        # The declined and the failed orders took their receipt tasks with them.
        assert example_store.task_count(receipts) == before + 1
        worker.signal(signal.SIGTERM)
        assert worker.wait_exit(30) == 0
        assert any("stopped" in line for line in worker.lines)
    finally:
        worker.stop()


def test_manage_tenure_runs_tenures_commands_on_djangos_database(example_db: str) -> None:
    env = postgres_environment(example_db)
    shell(env, PLACE_ORDERS)

    listed = manage(env, "tenure", "tasks", "--json", "--name", RECEIPT)
    migrated = manage(env, "tenure", "migrate")

    assert listed.returncode == 0, listed.stderr
    assert {task["name"] for task in json.loads(listed.stdout)["tasks"]} == {RECEIPT}
    assert migrated.returncode == 0, migrated.stderr
    assert "is up to date" in migrated.stdout


def test_the_worker_command_takes_tenure_workers_options(example_db: str) -> None:
    env = postgres_environment(example_db)

    helped = manage(env, "tenure_worker", "--help")
    wrong = manage(env, "tenure_worker", "--pool", "fibers")

    assert helped.returncode == 0
    assert "--concurrency" in helped.stdout and "tenure.contrib.django.configured:app" in (
        helped.stdout
    )
    assert wrong.returncode == 2
    assert "invalid choice: 'fibers'" in wrong.stderr
