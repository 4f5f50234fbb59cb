"""Creating tasks: one and many, ids, defaults, delays, and the creation event."""

from __future__ import annotations

import pytest

from tenure import DuplicateTask, InvalidInput, Status, Store
from tenure.task import LockPhase, UniqueRule
from tests.conformance.support import events_since, in_, last_event_cursor, new


def test_create_returns_pending_task_with_defaults(store: Store) -> None:
    task = store.task_create(new(topic="products-sync", name="sync", data={"op": "sync"}))
    assert task.status is Status.PENDING
    assert (task.topic, task.sub_topic, task.name) == ("products-sync", "default", "sync")
    assert task.data == {"op": "sync"}
    assert (task.attempts, task.max_attempts, task.priority, task.record_ver) == (0, 1, 0, 1)
    assert task.created_at is not None
    assert task.run_at is None  # runnable at once: no clock is ever compared for it
    assert task.lease_owner is None and task.lease_token is None
    assert store.task_get(task.id) == task


def test_create_keeps_every_field(store: Store) -> None:
    run_at = in_(3600).replace(microsecond=0)
    task = store.task_create(
        new(
            topic="t",
            name="n",
            id="7p9767c9hch7e6kt18nw9iwb1",
            sub_topic="eu",
            group_id="5a978",
            description="daily products data sync - 10/05/21",
            priority=5,
            max_attempts=4,
            tags=frozenset({"gpu", "ssd"}),
            timeout=10.0,
            run_at=run_at,
            unique=UniqueRule(key="k", lock=LockPhase.WHILE_EXECUTING),
            data=[1, "two", {"three": 3.0}, None, True],
        )
    )
    stored = store.task_get("7p9767c9hch7e6kt18nw9iwb1")
    assert stored == task
    assert stored is not None
    assert stored.run_at == run_at
    assert (stored.sub_topic, stored.group_id, stored.priority, stored.max_attempts) == (
        "eu",
        "5a978",
        5,
        4,
    )
    assert stored.tags == {"gpu", "ssd"} and stored.timeout == 10.0 and stored.unique_key == "k"
    assert stored.data == [1, "two", {"three": 3.0}, None, True]


def test_generated_ids_are_unique_and_time_sortable(store: Store) -> None:
    tasks = store.task_create_many([new() for _ in range(200)])
    ids = [t.id for t in tasks]
    assert len(set(ids)) == 200
    assert ids == sorted(ids)


def test_create_many_writes_all_and_one_event_each(store: Store) -> None:
    before = last_event_cursor(store)
    tasks = store.task_create_many([new(data=i) for i in range(50)])
    assert [t.data for t in tasks] == list(range(50))
    events = events_since(store, before)
    assert [(e.task_id, e.from_status, e.to_status) for e in events] == [
        (t.id, None, Status.PENDING) for t in tasks
    ]


def test_create_many_empty_is_a_no_op(store: Store) -> None:
    assert store.task_create_many([]) == []


def test_duplicate_id_is_refused_and_nothing_written(store: Store) -> None:
    store.task_create(new(id="same"))
    before = last_event_cursor(store)
    with pytest.raises(DuplicateTask) as raised:
        store.task_create_many([new(id="fresh"), new(id="same")])
    assert raised.value.task_id == "same"
    assert store.task_get("fresh") is None
    assert events_since(store, before) == []


def test_duplicate_id_within_one_batch_is_refused(store: Store) -> None:
    with pytest.raises(DuplicateTask):
        store.task_create_many([new(id="twice"), new(id="twice")])
    assert store.task_get("twice") is None


def test_delay_postpones_run_at(store: Store) -> None:
    task = store.task_create(new(delay=30))
    assert task.run_at is not None and task.created_at is not None
    assert 29.9 <= (task.run_at - task.created_at).total_seconds() <= 30.1


def test_get_unknown_is_none(store: Store) -> None:
    assert store.task_get("nope") is None


def test_payloads_round_trip_exactly(store: Store) -> None:
    data = {"zeta": 1e23, "alpha": 10**18, "mid": 0.1, "nested": {"b": [1.5, -0.0], "a": "é"}}
    task = store.task_create(new(data=data))
    stored = store.task_get(task.id)
    assert stored is not None
    assert stored.data == data
    assert list(stored.data) == ["zeta", "alpha", "mid", "nested"]  # key order kept
    assert list(stored.data["nested"]) == ["b", "a"]
    assert repr(stored.data["zeta"]) == "1e+23" and isinstance(stored.data["alpha"], int)


@pytest.mark.parametrize(
    "text", ["\\u0000", "C:\\u0000dir", "\\\\u0000", "\\\\\\u0000"], ids=["1", "path", "2", "3"]
)
def test_the_text_of_a_nul_escape_is_kept_not_taken_for_a_nul(store: Store, text: str) -> None:
    """A backslash followed by "u0000" is text like any other (a Windows path,
    a JSON sample in a payload); only a NUL character itself is refused."""
    data = {"text": text, "meta-like": [text]}
    task = store.task_create(new(data=data, meta={"k": text}))
    stored = store.task_get(task.id)
    assert stored is not None and stored.data == data and stored.meta == {"k": text}
    with pytest.raises(InvalidInput, match="NUL"):
        store.task_create(new(data={"text": text + "\x00"}))
