"""``settings.TENURE['TRANSACTIONAL']``: a plain ``task.enqueue()`` inside
Django's ``transaction.atomic()`` is written in Django's transaction, on
PostgreSQL and on SQLite; outside an atomic block, from another thread, or
from a running event loop it commits at once, as it would without Django;
``False`` brings that back everywhere; a store in another database does not
join (and ``True`` there is a ConfigError). Each case runs in a Django process
of its own (tests/integration/test_django.py's helpers); one process answers
all the cases of a configuration, as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_django import (
    django_script,
    own_database,
    postgres_database,
    sqlite_database,
)

pytestmark = pytest.mark.slow

APP = "tests.apps.basic:app"

CASES = """
import asyncio, json, threading
from django.db import connection, transaction
from tenure.contrib.django import transactional
from tenure.testing import isolated
from tests.apps.basic import add, app

class Undo(Exception):
    pass

def stored(handle):
    return app.store.task_get(handle.id) is not None

app.store  # tenure's tables exist before Django's transactions write in them
seen = {"hook": repr(app.enqueue_connection)}

with transaction.atomic():
    committed = add.enqueue(1, 2)
    seen["seen before the commit"] = stored(committed)
seen["committed"] = stored(committed)

try:
    with transaction.atomic():
        rolled_back = add.enqueue(1, 2)
        raise Undo
except Undo:
    pass
seen["rolled back"] = stored(rolled_back)

with transaction.atomic():
    set_rollback = add.enqueue(1, 2)
    transaction.set_rollback(True)
seen["set_rollback"] = stored(set_rollback)

outside = add.enqueue(1, 2)
seen["outside"] = stored(outside)

with transaction.atomic():
    kept = add.enqueue(1, 2)
    try:
        with transaction.atomic():
            undone = add.enqueue(3, 4)
            raise Undo
    except Undo:
        pass
seen["savepoint"] = [stored(kept), stored(undone)]

threaded = []
try:
    with transaction.atomic():
        worker = threading.Thread(target=lambda: threaded.append(add.enqueue(5, 6)))
        worker.start()
        worker.join()
        raise Undo
except Undo:
    pass
seen["other thread"] = stored(threaded[0])

async def from_async():
    return add.enqueue(7, 8), await add.aenqueue(9, 10)

try:
    with transaction.atomic():
        on_loop, in_thread = asyncio.run(from_async())
        raise Undo
except Undo:
    pass
seen["event loop"] = [stored(on_loop), stored(in_thread)]

try:
    with transaction.atomic():
        explicit = transactional(add).enqueue(1, 2)
        raise Undo
except Undo:
    pass
seen["explicit"] = stored(explicit)

with transaction.atomic():
    try:
        with transaction.atomic(savepoint=False):
            raise Undo
    except Undo:
        pass
    try:
        add.enqueue(1, 2)
        seen["broken transaction"] = "enqueued"
    except Exception as exc:
        seen["broken transaction"] = type(exc).__name__

with isolated(app):
    try:
        with transaction.atomic():
            private = add.enqueue(1, 2)
            raise Undo
    except Undo:
        pass
    seen["isolated"] = stored(private)

from tenure.testing import run_until_empty
add.enqueue(1, 2)
try:
    with transaction.atomic():
        drained = run_until_empty(app)  # in this thread, inside the worker's middleware
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        seen["drained in an atomic block"] = drained.done > 0
except Exception as exc:
    seen["drained in an atomic block"] = f"{type(exc).__name__}: {exc}"

print(json.dumps(seen))
"""

JOINED = {
    "seen before the commit": False,
    "committed": True,
    "rolled back": False,
    "set_rollback": False,
    "outside": True,
    "savepoint": [True, False],
    "other thread": True,
    "event loop": [True, True],
    "explicit": False,
    "broken transaction": "TransactionManagementError",
    "isolated": True,
}


def cases(settings: dict[str, Any]) -> dict[str, Any]:
    """What :data:`CASES` saw in a Django process of ``settings``."""
    done = django_script(settings, CASES)
    assert done.returncode == 0, done.stdout + done.stderr
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


@pytest.fixture(scope="module")
def plain_db(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL database of this module's own (``postgres_url`` first: it
    skips, or fails, when there is no server)."""
    with own_database("tenure_django_transactional") as dbname:
        yield dbname


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def joined(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The cases under the default settings, on each database."""
    if request.param == "sqlite":
        database = sqlite_database(tmp_path_factory.mktemp("joined") / "shop.sqlite3")
    else:
        database = postgres_database(request.getfixturevalue("plain_db"))
    return cases({"DATABASES": {"default": database}, "TENURE": {"APP": APP}})


def test_by_default_the_app_joins_djangos_atomic_blocks(joined: dict[str, Any]) -> None:
    assert joined["hook"] == "JoinAtomicBlocks(alias='default')"


def test_a_plain_enqueue_commits_with_the_atomic_block(joined: dict[str, Any]) -> None:
    assert joined["committed"] is True
    # Before the commit only Django's connection sees it: no worker could start it.
    assert joined["seen before the commit"] is False


def test_a_plain_enqueue_rolls_back_with_the_atomic_block(joined: dict[str, Any]) -> None:
    assert joined["rolled back"] is False
    assert joined["set_rollback"] is False


def test_a_savepoint_rolled_back_takes_only_its_own_task(joined: dict[str, Any]) -> None:
    assert joined["savepoint"] == [True, False]


def test_outside_an_atomic_block_the_task_commits_at_once(joined: dict[str, Any]) -> None:
    assert joined["outside"] is True


def test_another_thread_enqueues_on_its_own_connection(joined: dict[str, Any]) -> None:
    # The atomic block is the main thread's: the thread's task outlives its rollback.
    assert joined["other thread"] is True


def test_on_an_event_loop_the_enqueue_commits_at_once(joined: dict[str, Any]) -> None:
    # A sync enqueue on the loop (where Django refuses its connection) and an
    # aenqueue (run in a thread of asyncio's): neither raises, both commit.
    assert joined["event loop"] == [True, True]


def test_transactional_still_joins_explicitly(joined: dict[str, Any]) -> None:
    assert joined["explicit"] is False


def test_a_broken_transaction_refuses_the_task_as_django_refuses_queries(
    joined: dict[str, Any],
) -> None:
    assert joined["broken transaction"] == "TransactionManagementError"


def test_an_app_pointed_elsewhere_does_not_join(joined: dict[str, Any]) -> None:
    # tenure.testing.isolated(): the store is a private one, not Django's database.
    assert joined["isolated"] is True


def test_running_tasks_in_an_atomic_block_leaves_djangos_connection_open(
    joined: dict[str, Any],
) -> None:
    # The worker's middleware closes Django's old connections around each task,
    # but not one in an atomic block (a test's transaction, in run_until_empty).
    assert joined["drained in an atomic block"] is True


def test_transactional_false_commits_every_enqueue_at_once(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "shop.sqlite3")

    seen = cases(
        {"DATABASES": {"default": database}, "TENURE": {"APP": APP, "TRANSACTIONAL": False}}
    )

    assert seen["hook"] == "None"
    assert seen["rolled back"] is True and seen["set_rollback"] is True
    assert seen["savepoint"] == [True, True]
    assert seen["explicit"] is False  # transactional() is still there to ask for it


def test_a_url_of_the_same_database_joins(tmp_path: Path) -> None:
    path = tmp_path / "shop.sqlite3"
    tenure = {"APP": APP, "URL": f"sqlite:///{path}?busy_timeout=20"}

    seen = cases({"DATABASES": {"default": sqlite_database(path)}, "TENURE": tenure})

    assert {key: seen[key] for key in JOINED} == JOINED


def test_a_url_of_another_database_does_not_join(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "shop.sqlite3")
    tenure = {"APP": APP, "URL": f"sqlite:///{tmp_path / 'tasks.sqlite3'}"}
    code = (
        "from django.db import transaction\n"
        "from tests.apps.basic import add, app\n"
        "with transaction.atomic():\n"
        "    handle = add.enqueue(1, 2)\n"
        "    transaction.set_rollback(True)\n"
        "print(app.enqueue_connection, app.tasks.get(handle.id).status.value)\n"
    )

    done = django_script({"DATABASES": {"default": database}, "TENURE": tenure}, code)

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["None", "pending"]


def error_of(settings: dict[str, Any]) -> str:
    done = django_script(settings)
    assert done.returncode == 3, (done.stdout, done.stderr)
    return done.stdout.strip().splitlines()[-1]


def test_transactional_true_with_a_url_of_another_database_is_refused(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "shop.sqlite3")
    elsewhere = f"sqlite:///{tmp_path / 'tasks.sqlite3'}"
    tenure = {"APP": APP, "URL": elsewhere, "TRANSACTIONAL": True}

    error = error_of({"DATABASES": {"default": database}, "TENURE": tenure})

    assert error.startswith("ConfigError: settings.TENURE['TRANSACTIONAL'] is True, but ")
    assert "names another database than DATABASES['default']" in error
    assert "set 'TRANSACTIONAL' to False and enqueue from transaction.on_commit" in error


def test_a_url_beside_a_database_tenure_cannot_share(tmp_path: Path) -> None:
    dummy = {"ENGINE": "django.db.backends.dummy"}
    tenure = {"APP": APP, "URL": f"sqlite:///{tmp_path / 'tasks.sqlite3'}"}
    code = "from tests.apps.basic import app\nprint(app.enqueue_connection)\n"

    quiet = django_script({"DATABASES": {"default": dummy}, "TENURE": tenure}, code)
    insisted = error_of(
        {"DATABASES": {"default": dummy}, "TENURE": tenure | {"TRANSACTIONAL": True}}
    )

    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert quiet.stdout.split() == ["None"]
    assert insisted.startswith(
        "ConfigError: settings.TENURE['TRANSACTIONAL'] is True, but DATABASES['default'] is "
    )
    assert "and tenure keeps its tasks in PostgreSQL or SQLite" in insisted


def test_transactional_must_be_a_bool(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "shop.sqlite3")
    tenure = {"APP": APP, "TRANSACTIONAL": "yes"}

    error = error_of({"DATABASES": {"default": database}, "TENURE": tenure})

    assert error == "ConfigError: settings.TENURE['TRANSACTIONAL'] must be True or False, not 'yes'"
