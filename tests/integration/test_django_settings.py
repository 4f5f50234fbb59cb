"""tenure.contrib.django's settings and its edges, each in a Django process of its
own: a mistake in ``settings.TENURE`` or ``DATABASES`` is one ConfigError that
says what to do; a store Django's connection cannot reach is refused before a
task could land where no worker looks; the store follows Django to its test
database (and refuses to when it was opened too early); Django's psycopg 3
connection works for transactional enqueue whether it binds parameters on the
client or the server and whatever ``USE_TZ`` says.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import django
import pytest

from tenure.contrib.django.commandline import split_argv
from tests.integration.test_django import (
    clean_environment,
    django_script,
    own_database,
    postgres_database,
    sqlite_database,
)

pytestmark = pytest.mark.slow

APP = "tests.apps.basic:app"

ENQUEUE_THEN_ROLL_BACK = """
from django.db import transaction
from tenure.contrib.django import transactional
from tests.apps.basic import add

class Undo(Exception):
    pass

with transaction.atomic():
    kept = transactional(add).enqueue(1, 2)
try:
    with transaction.atomic():
        undone = transactional(add).enqueue(3, 4)
        raise Undo
except Undo:
    pass
print("kept", add.app.tasks.get(kept.id).status.value)
print("undone", add.app.store.task_get(undone.id))
"""


@pytest.mark.parametrize(
    ("argv", "django", "tenure"),
    [
        ("--concurrency 8 --pool=processes", "", "--concurrency 8 --pool=processes"),
        ("--settings shop.settings --topics a", "--settings shop.settings", "--topics a"),
        ("-v2 --skip-checks --help", "-v2 --skip-checks", "--help"),
        ("--pythonpath=src -- --settings x", "--pythonpath=src", "--settings x"),
    ],
)
def test_the_commands_split_djangos_options_from_tenures(
    argv: str, django: str, tenure: str
) -> None:
    assert split_argv(argv.split()) == (django.split(), tenure.split())


def error_of(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 3, (done.stdout, done.stderr)
    return done.stdout.strip().splitlines()[-1]


def test_a_missing_setting_names_what_to_write(tmp_path: Path) -> None:
    done = django_script({"DATABASES": {"default": sqlite_database(tmp_path / "db")}})

    assert error_of(done) == (
        "ConfigError: settings.TENURE is missing: name your tenure App in it, "
        "e.g. TENURE = {'APP': 'shop.tasks:app'}"
    )


@pytest.mark.parametrize(
    ("tenure", "message"),
    [
        ({"APPS": APP}, "unknown key 'APPS' in settings.TENURE: did you mean 'APP'?"),
        ({"APP": "tests.apps.basic"}, "must be 'module:attribute' naming your tenure App"),
        ({"APP": "tests.apps.basic:ap"}, "did you mean tests.apps.basic:app?"),
        ({"APP": APP, "DATABASE": "other"}, "must be an alias of settings.DATABASES"),
        ({"APP": APP, "URL": "mysql://db/shop"}, "unknown store URL scheme 'mysql'"),
    ],
)
def test_a_wrong_setting_is_one_config_error(
    tmp_path: Path, tenure: dict[str, Any], message: str
) -> None:
    database = sqlite_database(tmp_path / "db")

    done = django_script({"DATABASES": {"default": database}, "TENURE": tenure})

    assert error_of(done).startswith("ConfigError: ")
    assert message in error_of(done)


@pytest.mark.parametrize(
    ("database", "message"),
    [
        ({"ENGINE": "django.db.backends.dummy"}, "keeps its tasks in PostgreSQL or SQLite"),
        (sqlite_database(Path(":memory:")), "in-memory SQLite database"),
        (sqlite_database(Path("file:shop.db?mode=rw")), "is a SQLite URI"),
    ],
)
def test_a_database_tenure_cannot_share_is_refused(database: dict[str, Any], message: str) -> None:
    done = django_script({"DATABASES": {"default": database}, "TENURE": {"APP": APP}})

    assert error_of(done).startswith("ConfigError: DATABASES['default']")
    assert message in error_of(done)


def test_without_the_app_installed_transactional_says_so(tmp_path: Path) -> None:
    settings = {"INSTALLED_APPS": [], "DATABASES": {"default": sqlite_database(tmp_path / "db")}}
    code = "from tenure.contrib.django import transactional\nfrom tests.apps.basic import add\n"

    done = django_script(settings, code + "transactional(add)")

    assert "tenure.contrib.django is not set up: add 'tenure.contrib.django'" in error_of(done)


def test_on_sqlite_tasks_commit_and_roll_back_with_django(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "shop.sqlite3")

    done = django_script(
        {"DATABASES": {"default": database}, "TENURE": {"APP": APP}},
        "from django.core.management import call_command\n"
        "call_command('migrate', verbosity=0)\n" + ENQUEUE_THEN_ROLL_BACK,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["kept pending", "undone None"]


def test_a_store_url_of_another_database_is_refused_for_transactional_enqueue(
    tmp_path: Path,
) -> None:
    elsewhere = f"sqlite:///{tmp_path / 'tasks.sqlite3'}"
    settings = {
        "DATABASES": {"default": sqlite_database(tmp_path / "shop.sqlite3")},
        "TENURE": {"APP": APP, "URL": elsewhere},
    }

    done = django_script(settings, ENQUEUE_THEN_ROLL_BACK)

    assert "a task written in Django's transaction would never reach a worker" in error_of(done)
    assert "transaction.on_commit" in error_of(done)


def test_a_store_url_of_the_same_database_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "shop.sqlite3"
    settings = {
        "DATABASES": {"default": sqlite_database(path)},
        "TENURE": {"APP": APP, "URL": f"sqlite:///{path}?busy_timeout=20"},
    }

    done = django_script(settings, ENQUEUE_THEN_ROLL_BACK)

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["kept pending", "undone None"]


def test_the_tasks_can_live_in_another_alias(tmp_path: Path) -> None:
    databases = {
        "default": sqlite_database(tmp_path / "shop.sqlite3"),
        "tasks": sqlite_database(tmp_path / "tasks.sqlite3"),
    }
    code = (
        "from django.core.management import call_command\n"
        "from django.db import transaction\n"
        "from tenure.contrib.django import transactional\n"
        "from tests.apps.basic import add\n"
        "call_command('migrate', database='tasks', verbosity=0)\n"
        "with transaction.atomic(using='tasks'):\n"
        "    handle = transactional(add).enqueue(1, 2)\n"
        "print(add.app.tasks.get(handle.id).status.value)\n"
        "transactional(add, using='default')\n"
    )

    done = django_script(
        {"DATABASES": databases, "TENURE": {"APP": APP, "DATABASE": "tasks"}}, code
    )

    assert done.stdout.splitlines()[0] == "pending"
    assert "not the database of Django's connection 'default'" in error_of(done)


def test_the_store_follows_django_to_its_test_database(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "shop.sqlite3", TEST={"NAME": str(tmp_path / "t.db")})
    code = (
        "from django.test.utils import setup_databases, teardown_databases\n"
        "from tests.apps.basic import app\n"
        "before = app.url\n"
        "old = setup_databases(verbosity=0, interactive=False)\n"
        "print(before.rsplit('/', 1)[-1], app.url.rsplit('/', 1)[-1])\n"
        "teardown_databases(old, verbosity=0)\n"
    )

    done = django_script({"DATABASES": {"default": database}, "TENURE": {"APP": APP}}, code)

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["shop.sqlite3", "t.db"]


def test_a_store_opened_before_the_test_database_is_refused(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "shop.sqlite3", TEST={"NAME": str(tmp_path / "t.db")})
    code = (
        "from django.test.utils import setup_databases\n"
        "from tests.apps.basic import app\n"
        "app.store\n"
        "setup_databases(verbosity=0, interactive=False)\n"
    )

    done = django_script({"DATABASES": {"default": database}, "TENURE": {"APP": APP}}, code)

    assert "opened its store" in error_of(done)
    assert "before Django pointed it at" in error_of(done)


def test_an_in_memory_test_database_is_refused_and_warned_of(tmp_path: Path) -> None:
    settings = {
        "DATABASES": {"default": sqlite_database(tmp_path / "shop.sqlite3")},
        "TENURE": {"APP": APP},
    }
    check = "from django.core.management import call_command\ncall_command('check')\n"
    setup = "from django.test.utils import setup_databases\nsetup_databases(0, False)\n"

    checked = django_script(settings, check)
    refused = django_script(settings, setup)

    assert "(tenure.W001) Django's test database for 'default' will be SQLite in memory" in (
        checked.stderr
    )
    assert "TEST']['NAME']" in checked.stderr
    assert "in-memory SQLite database" in error_of(refused)


def test_without_psycopg_3_postgresql_is_refused_and_psycopg2_named() -> None:
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None  # as if psycopg 3 were not installed\n"
        "from tenure.contrib.django.databases import _need_psycopg3\n"
        "try:\n"
        "    _need_psycopg3('default')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )

    done = subprocess.run(
        [sys.executable, "-c", code],
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.stdout.startswith("ConfigError DATABASES['default'] is not reached through")
    assert "psycopg2 is not supported" in done.stdout


def test_the_configured_app_needs_djangos_settings() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tenure", "worker", "--app", "tenure.contrib.django.configured:app"],
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 2
    assert "DJANGO_SETTINGS_MODULE is not set" in done.stderr


@pytest.fixture(scope="module")
def plain_db(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL database of this module's own (``postgres_url`` first: it
    skips, or fails, when there is no server)."""
    with own_database("tenure_django_settings") as dbname:
        yield dbname


DJANGOS_POOL = pytest.param(
    {"pool": True},
    id="Django's connection pool",
    marks=pytest.mark.skipif(django.VERSION < (5, 1), reason="Django 5.1 added the pool"),
)


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({}, id="client-side binding"),
        pytest.param({"server_side_binding": True}, id="server-side binding"),
        DJANGOS_POOL,
    ],
)
def test_djangos_psycopg_connection_takes_tasks_in_its_transaction(
    plain_db: str, options: dict[str, Any]
) -> None:
    settings = {
        "DATABASES": {"default": postgres_database(plain_db, OPTIONS=options)},
        "TENURE": {"APP": APP},
    }

    done = django_script(settings, ENQUEUE_THEN_ROLL_BACK)

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["kept pending", "undone None"]


def test_without_use_tz_the_times_are_still_utc(plain_db: str) -> None:
    """With ``USE_TZ = False`` Django's connection reads times as naive ones of
    ``TIME_ZONE``; a settings module also makes that the process's zone
    (``TZ``), as this environment does, and so tenure reads them right."""
    settings = {
        "DATABASES": {"default": postgres_database(plain_db)},
        "TENURE": {"APP": APP},
        "USE_TZ": False,
        "TIME_ZONE": "America/Chicago",
    }
    code = (
        "from datetime import UTC, datetime\n"
        "from django.db import transaction\n"
        "from tenure.contrib.django import transactional\n"
        "from tests.apps.basic import add\n"
        "with transaction.atomic():\n"
        "    handle = transactional(add.options(delay=60)).enqueue(1, 2)\n"
        "stored = add.app.tasks.get(handle.id)\n"
        "print(handle.task.created_at == stored.created_at, handle.task.run_at == stored.run_at)\n"
        "print(abs((stored.created_at - datetime.now(UTC)).total_seconds()) < 60)\n"
    )

    done = django_script(settings, code, TZ="America/Chicago")

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["True", "True", "True"]
