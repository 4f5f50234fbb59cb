"""A PostgreSQL store works in a database of any encoding.

The store's sessions speak UTF-8, whatever the database's encoding: a database
made with ``SQL_ASCII`` (what ``initdb`` picks under the C locale) or
``LATIN1`` migrates, and text comes back as the ``str`` that went in. A
character the database cannot hold is refused with an error that names the
encoding, and nothing is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from tenure import Lease, StoreError
from tenure.store import NewTask, ReserveParams, open_store
from tenure.store.postgres.driver import connection_kwargs
from tests.conftest import POSTGRES_URL, _with_database

TEXT = {"SQL_ASCII": "café ü 中文 🎉", "LATIN1": "café ü ß"}


@pytest.fixture(params=sorted(TEXT))
def encoded_url(request: pytest.FixtureRequest, postgres_url: str) -> Iterator[str]:
    """A new database in the encoding of the test's parameter, dropped afterwards."""
    encoding = str(request.param)
    dbname = f"tenure_{encoding.lower()}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(
            f"CREATE DATABASE \"{dbname}\" ENCODING '{encoding}' "
            "LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
        )
    try:
        yield _with_database(POSTGRES_URL, dbname)
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


def encoding_of(url: str) -> str:
    with psycopg.connect(url) as conn:
        return str(conn.info.parameter_status("server_encoding"))


def test_tasks_keep_their_text_in_a_database_of_any_encoding(encoded_url: str) -> None:
    text = TEXT[encoding_of(encoded_url)]

    def new(name: str) -> NewTask:
        return NewTask(
            topic="enc", name=name, description=text, tags=frozenset({text}), data={"s": text}
        )

    with open_store(encoded_url) as store:  # opening migrates it
        one = store.task_create(new(f"one {text}"))
        many = store.task_create_many([new(f"many {text}") for _ in range(150)])  # by COPY
        assert [store.task_get(t.id) for t in [one, *many]] == [one, *many]
        assert (one.name, one.description, one.tags, one.data) == (
            f"one {text}",
            text,
            frozenset({text}),
            {"s": text},
        )
        offer = ReserveParams(owner=f"w {text}", topics=["enc"], tags=frozenset({text}))
        [running] = store.task_reserve(offer)  # the first created, with a tag of its text
        assert running.id == one.id and running.data == {"s": text}
        assert running.lease_token is not None
        done = store.task_complete(Lease(one.id, f"w {text}", running.lease_token), {"r": text})
        assert store.task_get(one.id) == done and done.result == {"r": text}
        assert store.task_count() == 151


@pytest.mark.parametrize("encoded_url", ["LATIN1"], indirect=True)  # SQL_ASCII takes any byte
def test_a_character_the_database_cannot_hold_is_refused_and_nothing_written(
    encoded_url: str,
) -> None:
    with open_store(encoded_url) as store:
        for write in (
            lambda: store.task_create(NewTask(topic="enc", name="n", data={"s": "🎉"})),
            lambda: store.task_create_many(
                [NewTask(topic="enc", name="n", data={"s": "🎉"}) for _ in range(150)]
            ),
        ):
            with pytest.raises(StoreError, match='no equivalent in encoding "LATIN1"'):
                write()
        assert store.task_count() == 0
        assert store.event_list() == []


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://h/db", "UTF8"),
        ("postgresql://h/db?client_encoding=LATIN1", None),  # the URL's own is kept
    ],
)
def test_the_store_s_sessions_speak_utf8_unless_the_url_says(url: str, expected: str) -> None:
    assert connection_kwargs(url, "store").get("client_encoding") == expected
