"""Unique tasks through the Python API on every store: declaration errors, the
lock key, the conflict strategies at enqueue, batches, TTLs and transactions."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

import tenure
from tenure import InvalidInput, Status, Unique, UniqueConflict
from tenure.store import ReserveParams, TaskFilter


@pytest.fixture
def app(store_url: str) -> Iterator[tenure.App]:
    application = tenure.App(store_url, unique_ttl=120)
    yield application
    application.close()


def declare(app: tenure.App, unique: Unique, name: str = "job") -> Any:
    def job(a: int, b: int = 0, c: int = 0, include: str = "all") -> None:
        return None

    return app.task(name=name, topic="u", unique=unique)(job)


# -- declaration -----------------------------------------------------------------------


@pytest.mark.parametrize("lock", ["until_executing", "until_executed"])
def test_reschedule_needs_while_executing_at_declaration(lock: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        Unique(lock=lock, on_conflict="reschedule")
    assert refused.value.field == "unique.on_conflict"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"lock": "sometimes"}, "unique.lock"),
        ({"lock": "until_executed", "on_conflict": "ignore"}, "unique.on_conflict"),
        ({"lock": "until_executed", "ttl": 0}, "unique.ttl"),
        ({"lock": "until_executed", "key": "not callable"}, "unique.key"),
    ],
)
def test_bad_declarations_name_their_field(options: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        Unique(**options)
    assert refused.value.field == field


def test_every_valid_combination_declares() -> None:
    for lock in ("until_executing", "while_executing", "until_executed"):
        for on_conflict in ("reject", "raise"):
            Unique(lock=lock, on_conflict=on_conflict)
    Unique(lock="while_executing", on_conflict="reschedule")


# -- the lock key ------------------------------------------------------------------------


def test_positional_and_keyword_calls_are_the_same_task(app: tenure.App) -> None:
    job = declare(app, Unique(lock="until_executed"))
    job.enqueue(1, 2)
    assert job.enqueue(a=1, b=2).rejected is not None
    assert job.enqueue(1, b=2).rejected is not None


def test_defaults_the_caller_left_out_are_not_part_of_the_key(app: tenure.App) -> None:
    job = declare(app, Unique(lock="until_executed"))
    job.enqueue(1)
    # Same values once defaults apply, but include= was passed: another key.
    assert job.enqueue(1, include="all").rejected is None
    assert job.enqueue(1).rejected is not None


def test_different_arguments_are_different_tasks(app: tenure.App) -> None:
    job = declare(app, Unique(lock="until_executed"))
    assert job.enqueue(1).rejected is None
    assert job.enqueue(2).rejected is None
    assert app.tasks.count(topic="u") == 2


def test_the_same_arguments_of_another_task_are_not_a_twin(app: tenure.App) -> None:
    one = declare(app, Unique(lock="until_executed"), name="one")
    other = declare(app, Unique(lock="until_executed"), name="other")
    assert one.enqueue(1).rejected is None
    assert other.enqueue(1).rejected is None


def test_key_on_a_subset_of_arguments(app: tenure.App) -> None:
    # The seed's UniqBasedOnTwoArgsWorker: only the first two arguments count.
    job = declare(app, Unique(lock="until_executed", key=lambda a, b=0, c=0, **_: [a, b]))
    assert job.enqueue(1, 2, 3).rejected is None
    assert job.enqueue(1, 2, 4).rejected is not None
    assert job.enqueue(1, 3, 3).rejected is None


def test_key_on_modified_arguments(app: tenure.App) -> None:
    # The seed's ModuloArgsWorker: the third argument counts modulo 5.
    job = declare(app, Unique(lock="until_executed", key=lambda a, b, c, **_: [a, b, c % 5]))
    assert job.enqueue(1, 2, 3).rejected is None
    assert job.enqueue(1, 2, 8).rejected is not None
    assert job.enqueue(1, 2, 4).rejected is None


def test_key_values_must_be_json(app: tenure.App) -> None:
    job = declare(app, Unique(lock="until_executed", key=lambda a, **_: {a}))
    with pytest.raises(InvalidInput) as refused:
        job.enqueue(1)
    assert refused.value.field == "unique.key"
    assert app.tasks.count(topic="u") == 0


# -- conflicts at enqueue ------------------------------------------------------------------


@pytest.mark.parametrize("lock", ["until_executing", "until_executed"])
def test_reject_returns_a_handle_that_says_so(app: tenure.App, lock: str) -> None:
    job = declare(app, Unique(lock=lock))
    first = job.enqueue(1)
    twin = job.enqueue(1)
    assert first.rejected is None and twin.rejected is not None
    assert twin.rejected.holder == first.id
    assert app.tasks.count(topic="u") == 1
    with pytest.raises(UniqueConflict):
        twin.refresh()
    with pytest.raises(UniqueConflict):
        twin.wait(timeout=1)


@pytest.mark.parametrize("lock", ["until_executing", "until_executed"])
def test_raise_raises_to_the_caller(app: tenure.App, lock: str) -> None:
    job = declare(app, Unique(lock=lock, on_conflict="raise"))
    first = job.enqueue(1)
    with pytest.raises(UniqueConflict) as refused:
        job.enqueue(1)
    assert refused.value.holder == first.id
    assert app.tasks.count(topic="u") == 1


def test_while_executing_takes_nothing_at_enqueue(app: tenure.App) -> None:
    job = declare(app, Unique(lock="while_executing", on_conflict="reschedule"))
    assert job.enqueue(1).rejected is None and job.enqueue(1).rejected is None
    assert app.tasks.count(topic="u") == 2
    assert app.store.unique_lock_list() == []


def test_reschedule_waits_five_seconds_unless_told_otherwise(app: tenure.App) -> None:
    job = declare(app, Unique(lock="while_executing", on_conflict="reschedule"))
    first, twin = job.enqueue(1), job.enqueue(1)
    now = app.store.clock_now()
    started = app.store.task_reserve(ReserveParams(owner="w", topics=["u"], limit=2, now=now))
    assert [task.id for task in started] == [first.id]
    waiting = app.store.task_get(twin.id)
    assert waiting is not None and waiting.status is Status.PENDING
    assert waiting.run_at is not None
    assert (waiting.run_at - now).total_seconds() == pytest.approx(5, abs=0.001)


def test_enqueue_many_rejects_the_twins_and_writes_the_rest(app: tenure.App) -> None:
    job = declare(app, Unique(lock="until_executed"))
    held = job.enqueue(9)
    handles = job.enqueue_many([(1,), (1,), (9,), {"a": 2}])
    assert [h.rejected is None for h in handles] == [True, False, False, True]
    assert handles[1].rejected is not None and handles[1].rejected.holder == handles[0].id
    assert handles[2].rejected is not None and handles[2].rejected.holder == held.id
    assert app.tasks.count(topic="u") == 3


def test_enqueue_many_with_raise_writes_nothing(app: tenure.App) -> None:
    job = declare(app, Unique(lock="until_executed", on_conflict="raise"))
    job.enqueue(9)
    with pytest.raises(UniqueConflict):
        job.enqueue_many([(1,), (9,)])
    assert app.tasks.count(topic="u") == 1


def test_the_lock_is_free_again_once_the_task_ends(app: tenure.App) -> None:
    job = declare(app, Unique(lock="until_executed"))
    first = job.enqueue(1)
    app.tasks.cancel(first.id)
    assert job.enqueue(1).rejected is None


# -- time to live ------------------------------------------------------------------------


def lifetime(app: tenure.App) -> float:
    [lock] = app.store.unique_lock_list()
    return (lock.expires_at - lock.created_at).total_seconds()


def test_the_app_default_ttl_applies(app: tenure.App) -> None:
    declare(app, Unique(lock="until_executed")).enqueue(1)
    assert lifetime(app) == pytest.approx(120)


def test_a_task_ttl_overrides_the_app_default(app: tenure.App) -> None:
    declare(app, Unique(lock="until_executed", ttl=30)).enqueue(1)
    assert lifetime(app) == pytest.approx(30)


def test_the_ttl_counts_from_the_scheduled_time(app: tenure.App) -> None:
    job = declare(app, Unique(lock="until_executing", ttl=30))
    task = job.options(delay=600).enqueue(1).task
    [lock] = app.store.unique_lock_list()
    assert task is not None and task.run_at is not None
    assert lock.expires_at == task.run_at + timedelta(seconds=30)


def test_the_default_ttl_is_ten_minutes() -> None:
    assert tenure.App("sqlite:///:memory:").unique_ttl == 600


# -- transactions ------------------------------------------------------------------------


def callers_connection(app: tenure.App, backend: str) -> Any:
    """A connection of the caller's own, with a transaction open on it."""
    if backend == "postgres":
        import psycopg

        return psycopg.connect(app.url)
    import sqlite3

    app.store  # noqa: B018 - opening the store creates the schema
    conn = sqlite3.connect(app.url.removeprefix("sqlite:///"), isolation_level=None)
    conn.execute("BEGIN")
    return conn


def test_a_rolled_back_enqueue_leaves_neither_task_nor_lock(app: tenure.App, backend: str) -> None:
    job = declare(app, Unique(lock="until_executed"))
    conn = callers_connection(app, backend)
    try:
        handle = job.options(connection=conn).enqueue(1)
        assert handle.rejected is None
        conn.rollback()
    finally:
        conn.close()
    assert app.tasks.count(topic="u") == 0 and app.tasks.locks() == []
    assert job.enqueue(1).rejected is None
    assert app.tasks.count(topic="u", status=Status.PENDING) == 1
    assert app.store.task_count(TaskFilter(topic="u")) == 1


def test_a_committed_enqueue_holds_its_lock(app: tenure.App, backend: str) -> None:
    job = declare(app, Unique(lock="until_executed"))
    conn = callers_connection(app, backend)
    try:
        handle = job.options(connection=conn).enqueue(1)
        conn.commit()
    finally:
        conn.close()
    assert [lock.task_id for lock in app.tasks.locks()] == [handle.id]
    assert job.enqueue(1).rejected is not None
