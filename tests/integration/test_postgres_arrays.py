"""Arrays sent as literals (store/postgres/arrays.py) arrive as the lists they
were, whatever their text holds, and connections that do not know them still
send them, as plain lists."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tenure.store import NewTask, Store
from tenure.store.postgres.arrays import IntArray, TextArray
from tenure.store.postgres.copying import COPY_MIN_TASKS
from tenure.store.postgres.driver import configure

AWKWARD = [
    "plain",
    "",
    " padded ",
    'a "quoted" word',
    "back\\slash\\",
    "{braces},commas",
    "NULL",
    "null",
    "ünïcødé ✓",
    '{"result": [1, "two"]}',
    "line\nbreak\ttab",
    None,
]


@pytest.fixture
def conn(postgres_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(postgres_url, autocommit=True) as opened:
        yield opened


@pytest.mark.parametrize("configured", [True, False])
def test_text_and_bigint_arrays_arrive_as_sent(
    conn: psycopg.Connection[tuple[object, ...]], configured: bool
) -> None:
    if configured:
        configure(conn)
    numbers = [0, 1, -1, 2**63 - 1, -(2**63), None]
    row = conn.execute(
        "SELECT %s::text[], %s::bigint[], cardinality(%s::text[])",
        [TextArray(AWKWARD), IntArray(numbers), TextArray([])],
    ).fetchone()
    assert row == (AWKWARD, numbers, 0)


def test_json_results_cast_from_a_text_array(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    configure(conn)
    results = ['{"a": "x\\"y"}', "[1, 2.5, null]", '"\\\\"', "null"]
    row = conn.execute("SELECT %s::json[]::text[]", [TextArray(results)]).fetchone()
    assert row == (results,)


@pytest.mark.parametrize("count", [1, COPY_MIN_TASKS])
def test_tags_of_new_tasks_arrive_as_given(postgres_store: Store, count: int) -> None:
    """One task (its values bound one by one) and a batch written by COPY, whose
    text format escapes the literal once more."""
    tags = frozenset(tag for tag in AWKWARD if tag)
    created = postgres_store.task_create_many(
        [NewTask(topic="t", name="n", tags=tags) for _ in range(count)]
    )
    for task in created:
        stored = postgres_store.task_get(task.id)
        assert stored is not None and stored.tags == tags
