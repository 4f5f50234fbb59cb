"""Small pure pieces: ids, cursors, JSON, the query loader, URLs, the App."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

import tenure
from tenure import ConfigError, InvalidInput
from tenure.ids import new_id
from tenure.serializer import dumps, loads
from tenure.store import NewTask
from tenure.store import cursor as cursors
from tenure.store.sqlfile import load_queries, migrations
from tenure.store.url import DEFAULT_URL, open_store, redact, resolve_url


def test_ids_are_uuid7_and_strictly_increasing() -> None:
    ids = [new_id() for _ in range(10_000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert {uuid.UUID(i).version for i in ids} == {7}


def test_cursor_round_trip_and_scope() -> None:
    scope = cursors.scope_of(["list", "a"])
    assert cursors.decode(cursors.encode(42, scope), scope) == 42
    with pytest.raises(InvalidInput):
        cursors.decode(cursors.encode(42, scope), cursors.scope_of(["list", "b"]))


def test_json_round_trips_and_refuses_what_it_cannot_keep() -> None:
    value = {"a": [1, 2.5, None, True, "é"], "b": {}}
    assert loads(dumps(value, "data")) == value
    assert loads(None) is None
    with pytest.raises(InvalidInput, match="NUL"):
        dumps({"k": "\x00"}, "data")
    with pytest.raises(InvalidInput, match="over the limit"):
        dumps("x" * 10, "data", max_bytes=5)


def test_every_sqlite_query_loads_with_a_name() -> None:
    queries = load_queries("tenure.store.sqlite")
    assert {"insert_task", "reserve_any", "reserve_topics", "revoke_task"} <= set(queries)
    assert all(sql and not sql.startswith("--") for sql in queries.values())
    assert [m[0] for m in migrations("tenure.store.sqlite")] == list(range(1, 15))
    # SQLite's seventh gives event ids without AUTOINCREMENT's sequence page.
    # PostgreSQL has more: its event triggers run once per statement, its
    # events record their transaction for the commit-safe cursor (SQLite's
    # writers are serialised, so its event ids already commit in order), and it
    # keeps tallies (SQLite counts its tables when asked, but for the totals); and
    # it notifies only while a waiter is registered (NOTIFY serialises commits);
    # one statement writes a status change's events and tallies; its
    # events are keyed by that cursor's order; and its ids are indexed in byte
    # order too (SQLite's id index is, already); and its tallies have keys; and
    # its trigger functions carry the schema tenure moved into.
    assert [m[0] for m in migrations("tenure.store.postgres")] == list(range(1, 23))


def test_url_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TENURE_URL", raising=False)
    assert resolve_url(None) == DEFAULT_URL == "sqlite:///tenure.db"
    monkeypatch.setenv("TENURE_URL", "sqlite:///other.db")
    assert resolve_url(None) == "sqlite:///other.db"
    assert resolve_url("sqlite:///x.db") == "sqlite:///x.db"
    assert redact("postgresql://u:secret@h/db") == "postgresql://u:***@h/db"


@pytest.mark.parametrize(
    "url",
    ["mysql://x/y", "sqlite://host/x.db", "sqlite:///x.db?nope=1", "sqlite:///x.db?busy_timeout=z"],
)
def test_bad_urls_are_config_errors(url: str) -> None:
    with pytest.raises(ConfigError):
        open_store(url)


def test_app_defaults_to_sqlite_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TENURE_URL", raising=False)
    app = tenure.App()
    assert app.url == "sqlite:///tenure.db"
    assert not (tmp_path / "tenure.db").exists()  # nothing opened yet
    app.store.task_create(NewTask(topic="t", name="n"))
    assert (tmp_path / "tenure.db").exists()
    app.close()


def test_sqlite_url_options(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'x.db'}?synchronous=normal&busy_timeout=5")
    store.task_create(NewTask(topic="t", name="n"))
    store.close()


def test_closing_a_store_in_use_by_another_thread_is_safe(tmp_path: Path) -> None:
    import threading

    from tenure import StoreError
    from tenure.store import ReserveParams

    store = open_store(f"sqlite:///{tmp_path / 'x.db'}")
    started = threading.Event()
    errors: list[BaseException] = []

    def spin() -> None:
        try:
            while True:
                store.task_reserve(ReserveParams(owner="w"))
                started.set()
        except StoreError as exc:
            errors.append(exc)

    thread = threading.Thread(target=spin)
    thread.start()
    assert started.wait(10)
    store.close()
    thread.join(10)
    assert not thread.is_alive()
    assert len(errors) == 1
    assert "closed" in str(errors[0])


TENURE_TABLES = (
    "tasks|events|event_log|workers|leaders|reports|task_counts|task_transitions"
    "|unique_locks|wake_wanted|gates|tenure_migrations"
)


def test_every_postgres_query_names_tenures_tables_with_their_schema() -> None:
    """A table named without its schema would be looked for on the search path
    of whichever session runs the statement: an application's own ``tasks``
    table, or none at all through a pooler."""
    from tenure.store.postgres.schema import queries

    bare = re.compile(
        rf"\b(?:FROM|JOIN|INTO|UPDATE|TABLE|ONLY|ANALYZE|EXISTS|TRUNCATE)\s+({TENURE_TABLES})\b"
    )
    found = {
        name: bare.findall(sql)
        for name, sql in queries("jobs").items()
        if name not in {"move_from_public"}  # it moves them, by name, out of public
    }
    assert {name: tables for name, tables in found.items() if tables} == {}
    assert '"jobs".tasks' in queries("jobs")["get_task"]


def test_the_default_schemas_queries_are_one_mapping_however_named() -> None:
    """A store of the default schema asks for ``queries("tenure")``; what a
    process changes in ``queries()`` (a test's longer lock wait) must be what
    its stores run."""
    from tenure.store.postgres.schema import DEFAULT_SCHEMA, queries

    assert queries() is queries(DEFAULT_SCHEMA)
    assert queries("jobs") is queries("jobs") and queries("jobs") is not queries()
