"""Bulk enqueue by COPY on PostgreSQL: a large batch is streamed with ``COPY``
and must store, return, log and refuse exactly what the ordinary insert does:
the same tasks (odd text, big and null fields, tags, run times, unique rules),
a creation event and a tally for each, every refusal whole, and a wake-up only
for what was committed."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from tenure import DuplicateTask, InvalidInput, Status, Task, UniqueConflict
from tenure.store import NewTask
from tenure.store.postgres import copying
from tenure.store.postgres.backend import PostgresStore
from tenure.task import LockPhase, UniqueRule
from tests.conftest import _empty_postgres
from tests.integration.waiting import Waiting

COUNT = copying.COPY_MIN_TASKS + 20
ODD_TEXT = (
    "é ü 中文 🎉 \u202ertl a\u0301 tab\there new\nline cr\rret back\\slash \"q\" 's' {,} \\N"
    " \\. \b\f\v\x01\x7f\u2028 end"
)
CONTROL_TEXT = "no backslash: tab\there new\nline cr\rret \b\f\v\x01 end"
WAKE_BOUND = 10.0


@pytest.fixture
def store(postgres_url: str) -> Iterator[PostgresStore]:
    _empty_postgres(postgres_url)
    opened = PostgresStore(postgres_url)
    yield opened
    opened.close()


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of each batch written by COPY (the store's own function, counted)."""
    sizes: list[int] = []
    real = copying.copy_rows

    def counted(q: Any, conn: Any, tasks: Any, now: Any) -> list[Task]:
        sizes.append(len(tasks))
        return real(q, conn, tasks, now)

    monkeypatch.setattr(copying, "copy_rows", counted)
    return sizes


def odd_batch(prefix: str, count: int = COUNT) -> list[NewTask]:
    """Tasks whose fields exercise COPY's text format: unicode, escapes, nulls,
    big payloads, odd tags, explicit run times and unique rules."""
    at = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    tasks = []
    for i in range(count):
        kind = i % 5
        tasks.append(
            NewTask(
                topic=f"topic-{i % 3}",
                name=f"{prefix}.name {ODD_TEXT}" if kind == 0 else f"{prefix}.n",
                # An id holds no control character (it is a URL segment), but
                # may hold what COPY escapes otherwise: \N, a backslash.
                id=f"{prefix}-{i:04d}" + {3: " back\\slash id", 4: " \\N id\\"}.get(kind, ""),
                data={
                    "args": [ODD_TEXT, i, 1.5, None, True, [], {}],
                    "kwargs": {"big": "x" * 300_000} if kind == 1 else {"k\\ey\t": ODD_TEXT},
                },
                sub_topic="sub \\ ✓" if kind == 2 else "default",
                group_id=None if kind else f"g {ODD_TEXT}",
                description={0: ODD_TEXT, 2: CONTROL_TEXT}.get(kind),
                priority=-(2**31) if kind == 3 else i,
                max_attempts=1 + kind,
                tags=frozenset({"a,b", 'q"uote', "{brace}", "back\\slash", "sp ace", "NULL"})
                if kind == 4
                else frozenset(),
                timeout=None if kind else 2.5,
                run_at=at + timedelta(seconds=i) if kind == 3 else None,
                unique=UniqueRule(f"{prefix}-key-{i}", LockPhase.UNTIL_EXECUTED, ttl=30.5)
                if kind == 2
                else None,
            )
        )
    return tasks


def comparable(task: Task) -> dict[str, Any]:
    """A task without what differs between two writes of it (id, times)."""
    fields = dataclasses.asdict(task)
    for name in ("id", "created_at", "updated_at", "name"):
        fields.pop(name)
    if task.unique_key is not None:
        fields["unique_key"] = task.unique_key.split("-key-")[1]
    return fields


def test_a_large_batch_is_copied_and_stored_as_the_ordinary_insert_stores_it(
    store: PostgresStore, copies: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    copied = store.task_create_many(odd_batch("copy"))
    assert copies == [COUNT]
    monkeypatch.setattr(copying, "COPY_MIN_TASKS", 10**9)
    inserted = store.task_create_many(odd_batch("insert"))
    assert copies == [COUNT]  # the second went by the ordinary statement
    read_copied = [store.task_get(task.id) for task in copied]
    read_inserted = [store.task_get(task.id) for task in inserted]
    assert read_copied == copied  # what COPY returned is what reads back
    assert read_inserted == inserted
    assert [comparable(t) for t in copied] == [comparable(t) for t in inserted]
    assert copied[0].data["args"][0] == ODD_TEXT
    assert copied[1].data["kwargs"]["big"] == "x" * 300_000
    assert copied[0].created_at == copied[-1].created_at == copied[0].updated_at


def test_copied_tasks_are_in_the_event_log_and_the_tallies(
    store: PostgresStore, copies: list[int]
) -> None:
    created = store.task_create_many(odd_batch("ev"))
    assert copies == [COUNT]
    events = store.event_list(limit=10_000)
    assert [(e.task_id, e.from_status, e.to_status) for e in events] == [
        (task.id, None, Status.PENDING) for task in created
    ]
    assert all(e.at == created[0].created_at for e in events)
    stats = store.task_stats()
    assert {topic: counts[Status.PENDING] for topic, counts in stats.counts.items()} == {
        f"topic-{n}": len([i for i in range(COUNT) if i % 3 == n]) for n in range(3)
    }
    assert store.task_count() == COUNT


def test_copied_tasks_are_reserved_in_the_order_given(
    store: PostgresStore, copies: list[int]
) -> None:
    from tenure.store import ReserveParams

    tasks = [NewTask(topic="order", name="n", id=f"o-{i:04d}") for i in range(COUNT)]
    store.task_create_many(tasks)
    assert copies == [COUNT]
    reserved = store.task_reserve(ReserveParams(owner="w", topics=["order"], limit=COUNT))
    assert [task.id for task in reserved] == [task.id for task in tasks]


def test_an_explicit_now_stamps_the_copied_tasks(store: PostgresStore, copies: list[int]) -> None:
    now = datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    created = store.task_create_many(odd_batch("now"), now=now)
    assert copies == [COUNT]
    assert {task.created_at for task in created} == {now}
    assert store.task_get(created[7].id) == created[7]


def test_a_nul_character_is_refused_before_anything_is_sent(
    store: PostgresStore, copies: list[int]
) -> None:
    tasks = odd_batch("nul")
    tasks[50] = dataclasses.replace(tasks[50], data={"args": ["a\u0000b"]})
    with pytest.raises(InvalidInput, match="NUL"):
        store.task_create_many(tasks)
    tasks = odd_batch("nul")
    tasks[3] = dataclasses.replace(tasks[3], description="a\x00b")
    with pytest.raises(InvalidInput, match="NUL"):
        store.task_create_many(tasks)
    assert copies == []
    assert store.task_count() == 0


def test_the_text_of_a_nul_escape_is_copied_as_it_is(
    store: PostgresStore, copies: list[int]
) -> None:
    """A backslash, then "u0000", is text: COPY's own escaping of the backslash
    keeps it so (only a NUL character itself is refused)."""
    tasks = odd_batch("text")
    tasks[50] = dataclasses.replace(tasks[50], data={"args": ["\\u0000", "C:\\u0000"]})
    created = store.task_create_many(tasks)
    assert copies == [len(tasks)]
    stored = store.task_get(created[50].id)
    assert stored is not None and stored.data == {"args": ["\\u0000", "C:\\u0000"]}


def test_a_batch_with_an_existing_id_writes_nothing(
    store: PostgresStore, copies: list[int]
) -> None:
    store.task_create(NewTask(topic="t", name="n", id="dup-0077"))
    with pytest.raises(DuplicateTask) as refused:
        store.task_create_many(odd_batch("dup"))
    assert refused.value.task_id == "dup-0077"
    assert copies == [COUNT]
    assert store.task_count() == 1
    assert len(store.event_list(limit=10_000)) == 1


def test_a_batch_with_a_held_unique_lock_writes_nothing(
    store: PostgresStore, copies: list[int]
) -> None:
    first = store.task_create_many(odd_batch("u1"))
    taken = [task for task in first if task.unique_key is not None]
    holder = taken[3]
    again = odd_batch("u2")
    index = next(i for i, t in enumerate(again) if t.unique is not None and i > 20)
    assert holder.unique_key is not None
    rule = UniqueRule(holder.unique_key, LockPhase.UNTIL_EXECUTED)
    again[index] = dataclasses.replace(again[index], unique=rule)
    with pytest.raises(UniqueConflict) as refused:
        store.task_create_many(again)
    assert list(refused.value.conflicts) == [(index, holder.unique_key, holder.id)]
    assert copies == [COUNT, COUNT]
    assert store.task_count() == COUNT
    assert len(store.unique_lock_list()) == len(taken)


def test_a_delay_sends_the_batch_down_the_ordinary_path(
    store: PostgresStore, copies: list[int]
) -> None:
    tasks = [NewTask(topic="t", name="n", delay=60 if i == 70 else None) for i in range(COUNT)]
    created = store.task_create_many(tasks)
    assert copies == []
    assert created[70].run_at is not None and created[70].created_at is not None
    assert created[70].run_at - created[70].created_at == timedelta(seconds=60)
    assert created[0].run_at is None


def test_runs_of_shared_fields_are_copied_as_each_task_s_own(
    store: PostgresStore, copies: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tasks holding the very same field objects (as one task function's do)
    share one formatting of them until a field changes: here the priority
    halfway and the run time (at +05:30) a third of the way."""
    at = datetime(2031, 5, 6, 7, 8, 9, 250000, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    shared: dict[str, Any] = {"topic": "runs", "tags": frozenset({"x y"}), "description": "d\tx"}
    low, high = 1, 2**20

    def batch(prefix: str) -> list[NewTask]:
        return [
            NewTask(
                **shared,
                name=prefix,
                id=f"{prefix}-{i}",
                priority=low if i < COUNT // 2 else high,
                run_at=at if i < COUNT // 3 else None,
            )
            for i in range(COUNT)
        ]

    copied = store.task_create_many(batch("copy"))
    monkeypatch.setattr(copying, "COPY_MIN_TASKS", 10**9)
    inserted = store.task_create_many(batch("insert"))
    assert copies == [COUNT]
    read = [store.task_get(task.id) for task in copied]
    assert read == copied
    assert [comparable(t) for t in read] == [
        comparable(t) for t in (store.task_get(task.id) for task in inserted) if t is not None
    ]
    assert [t.priority for t in copied] == [low] * (COUNT // 2) + [high] * (COUNT - COUNT // 2)
    assert [t.run_at for t in copied] == [at] * (COUNT // 3) + [None] * (COUNT - COUNT // 3)


@pytest.mark.parametrize(("encoding", "text"), [("SQL_ASCII", "é ü 中文 🎉"), ("LATIN1", "é ü ß")])
def test_a_batch_is_copied_whatever_the_caller_s_client_encoding(
    postgres_url: str, store: PostgresStore, copies: list[int], encoding: str, text: str
) -> None:
    tasks = [
        NewTask(
            topic="enc",
            name=f"n {text}",
            id=f"enc-{i} {text}",
            data={"s": text},
            tags=frozenset({text}),
            description=text,
        )
        for i in range(COUNT)
    ]
    with psycopg.connect(postgres_url) as caller:
        caller.execute(f"SET client_encoding TO '{encoding}'")
        created = store.task_create_many(tasks, connection=caller)
        caller.commit()
    assert copies == [COUNT]
    assert [store.task_get(task.id) for task in created] == created
    assert {(t.name, t.data["s"], t.description) for t in created} == {(f"n {text}", text, text)}
    assert all(t.tags == frozenset({text}) for t in created)


def test_on_a_callers_connection_the_copied_tasks_live_and_die_with_its_transaction(
    postgres_url: str, store: PostgresStore, copies: list[int]
) -> None:
    with psycopg.connect(postgres_url, row_factory=dict_row) as caller:  # any row factory
        store.task_create_many(odd_batch("rolled"), connection=caller)
        caller.rollback()
        assert store.task_count() == 0
        caller.execute("SELECT 1")  # a transaction of the caller's, open
        store.task_create_many(odd_batch("kept"), connection=caller)
        with pytest.raises(DuplicateTask):  # refused inside it: a savepoint undoes only ours
            store.task_create_many(odd_batch("kept"), connection=caller)
        assert caller.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        assert store.task_count() == 0  # not committed yet
        caller.commit()
    assert copies == [COUNT, COUNT, COUNT]
    assert store.task_count() == COUNT
    assert len(store.event_list(limit=10_000)) == COUNT


def test_a_copied_batch_wakes_a_waiter_once_committed_and_never_if_rolled_back(
    postgres_url: str, store: PostgresStore, copies: list[int]
) -> None:
    waiter = PostgresStore(postgres_url, role="waiter")
    try:
        assert waiter.listen(timeout=10)
        with psycopg.connect(postgres_url) as caller:
            tasks = [NewTask(topic="maybe", name="n") for _ in range(COUNT)]
            store.task_create_many(tasks, connection=caller)
            caller.rollback()
        assert waiter.task_wait(["maybe"], 0) is True  # registered now: look first
        assert waiter.task_wait(["maybe"], 0.5) is False
        waiting = Waiting(waiter, ["maybe"], 60)
        store.task_create_many([NewTask(topic="maybe", name="n") for _ in range(COUNT)])
        assert waiting.result() is True
        assert copies == [COUNT, COUNT]
    finally:
        waiter.close()


def test_a_listener_hears_every_committed_enqueue_one_by_one_and_copied(
    postgres_url: str, store: PostgresStore, copies: list[int]
) -> None:
    """Each commit wakes the listener again, whichever path wrote it."""
    listener = PostgresStore(postgres_url, role="waiter")
    heard = threading.Event()
    stop = listener.task_notify(["every"], heard)
    stop.idle(time.monotonic())
    try:
        assert listener.listen(timeout=10)
        for size in (1, COUNT, 1, COUNT, 1):
            heard.clear()
            store.task_create_many([NewTask(topic="every", name="n") for _ in range(size)])
            assert heard.wait(WAKE_BOUND), f"a committed batch of {size} woke no one"
        assert copies == [COUNT, COUNT]
    finally:
        stop()
        listener.close()
