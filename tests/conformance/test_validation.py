"""Bad input: a typed InvalidInput naming the field, and nothing written."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tenure import InvalidInput, Lease, LeaseLost, Store, TaskError
from tenure.checks import MAX_NAME_LENGTH
from tenure.store import NewTask, ReserveParams, TaskFilter
from tests.conformance.support import OWNER, last_event_cursor, new, reserve_one


def deep(levels: int) -> Any:
    value: Any = []
    for _ in range(levels):
        value = [value]
    return value


BAD_TASKS: dict[str, tuple[dict[str, Any], str]] = {
    "set": ({"data": {1, 2}}, "data"),
    "bytes": ({"data": b"raw"}, "data"),
    "datetime": ({"data": datetime(2020, 1, 1)}, "data"),
    "nan": ({"data": float("nan")}, "data"),
    "infinity": ({"data": {"x": float("inf")}}, "data['x']"),
    "nul": ({"data": "a\x00b"}, "data"),
    "surrogate": ({"data": "\ud800"}, "data"),
    "too-deep": ({"data": deep(100_000)}, "data"),
    "object": ({"data": object()}, "data"),
    "empty-topic": ({"topic": ""}, "topic"),
    "long-topic": ({"topic": "t" * (MAX_NAME_LENGTH + 1)}, "topic"),
    "topic-not-str": ({"topic": 5}, "topic"),
    "empty-name": ({"name": ""}, "name"),
    "empty-sub-topic": ({"sub_topic": ""}, "sub_topic"),
    "negative-timeout": ({"timeout": -1}, "timeout"),
    "zero-timeout": ({"timeout": 0}, "timeout"),
    "nan-timeout": ({"timeout": float("nan")}, "timeout"),
    "negative-delay": ({"delay": -5}, "delay"),
    "run-at-and-delay": ({"delay": 5, "run_at": datetime.now().astimezone()}, "delay"),
    "naive-run-at": ({"run_at": datetime(2030, 1, 1)}, "run_at"),
    "zero-attempts": ({"max_attempts": 0}, "max_attempts"),
    "bool-priority": ({"priority": True}, "priority"),
    "float-priority": ({"priority": 1.5}, "priority"),
    "tags-as-string": ({"tags": "gpu"}, "tags"),
    "empty-tag": ({"tags": frozenset({""})}, "tags"),
    "empty-id": ({"id": ""}, "id"),
    # Every id is one segment of a URL (the API's paths, the dashboard's links).
    "id-with-a-slash": ({"id": "a/b"}, "id"),
    "id-dot": ({"id": "."}, "id"),
    "id-dot-dot": ({"id": ".."}, "id"),
    "id-with-a-newline": ({"id": "a\nb"}, "id"),
    "id-with-a-c1-control": ({"id": "a\x85b"}, "id"),
}


@pytest.mark.parametrize("case", sorted(BAD_TASKS))
def test_bad_task_is_refused_and_nothing_written(store: Store, case: str) -> None:
    fields, field = BAD_TASKS[case]
    before = last_event_cursor(store)
    with pytest.raises(InvalidInput) as raised:
        store.task_create(NewTask(**{"topic": "t", "name": "n", **fields}))
    assert raised.value.field == field
    assert store.task_list().tasks == [] and last_event_cursor(store) == before


def test_bad_task_in_a_batch_names_its_index_and_writes_none(store: Store) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.task_create_many([new(), new(data={1}), new()])
    assert raised.value.field == "tasks[1].data"
    assert store.task_list().tasks == []


def test_payload_size_limit_is_configurable(make_store: Any) -> None:
    small = make_store(max_payload_bytes=100)
    small.task_create(new(data="x" * 90))
    with pytest.raises(InvalidInput, match="over the limit of 100") as raised:
        small.task_create(new(data="x" * 200))
    assert raised.value.field == "data"


def test_default_payload_limit_is_one_mebibyte(store: Store) -> None:
    store.task_create(new(data="x" * ((1 << 20) - 2)))  # the quotes make it exactly 1 MiB
    with pytest.raises(InvalidInput, match="over the limit"):
        store.task_create(new(data="x" * (1 << 20)))


def test_result_is_checked_like_data(store: Store) -> None:
    store.task_create(new())
    task, lease = reserve_one(store)
    with pytest.raises(InvalidInput) as raised:
        store.task_complete(lease, {"when": datetime(2020, 1, 1)})
    assert raised.value.field == "result['when']"
    assert store.task_get(task.id) == task


BAD_RESERVES: dict[str, tuple[dict[str, Any], str]] = {
    "negative-lease": ({"lease_seconds": -1}, "lease_seconds"),
    "zero-lease": ({"lease_seconds": 0}, "lease_seconds"),
    "zero-limit": ({"limit": 0}, "limit"),
    "huge-limit": ({"limit": 10**9}, "limit"),
    "empty-owner": ({"owner": ""}, "owner"),
    "topics-as-string": ({"topics": "a"}, "topics"),
    "no-topics": ({"topics": []}, "topics"),
}


@pytest.mark.parametrize("case", sorted(BAD_RESERVES))
def test_bad_reserve_is_refused(store: Store, case: str) -> None:
    store.task_create(new())
    fields, field = BAD_RESERVES[case]
    with pytest.raises(InvalidInput) as raised:
        store.task_reserve(ReserveParams(**{"owner": OWNER, **fields}))
    assert raised.value.field == field
    assert store.task_list_leased().tasks == []


def test_bad_lease_and_snooze_times_are_refused(store: Store) -> None:
    store.task_create(new())
    task, lease = reserve_one(store)
    for call, field in [
        (lambda: store.lease_extend(lease, -1), "lease_seconds"),
        (lambda: store.task_snooze(lease, -1), "seconds"),
        (lambda: store.task_fail(lease, TaskError("E", "m"), retry_in=-1), "retry_in"),
        (lambda: store.task_revoke(task.id, 0), "record_ver"),
    ]:
        with pytest.raises(InvalidInput) as raised:
            call()
        assert raised.value.field == field
    assert store.task_get(task.id) == task


def test_unknown_status_and_bad_limits_in_listing(store: Store) -> None:
    with pytest.raises(InvalidInput):
        store.task_list(TaskFilter(status="nope"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        store.task_list(limit=0)
    with pytest.raises(InvalidInput):
        store.event_list(after="0.-1")


def test_sql_metacharacters_are_plain_text(store: Store) -> None:
    topic = "'; DROP TABLE tasks;--"
    task = store.task_create(new(topic=topic, name="%_\\"))
    assert [t.id for t in store.task_list(TaskFilter(topic=topic)).tasks] == [task.id]
    assert store.task_list(TaskFilter(name="%")).tasks == []
    assert store.task_get(task.id) == task


def test_fake_lease_token_is_refused(store: Store) -> None:
    task = store.task_create(new())
    with pytest.raises(LeaseLost):
        store.task_complete(Lease(task.id, OWNER, 1))
    assert store.task_get(task.id) == task


OUT_OF_RANGE: dict[str, tuple[dict[str, Any], str]] = {
    "huge-priority": ({"priority": 2**40}, "priority"),
    "huge-max-attempts": ({"max_attempts": 2**63}, "max_attempts"),
    "huge-delay": ({"delay": 1e300}, "delay"),
    "huge-int-delay": ({"delay": 10**400}, "delay"),
    "tags-none": ({"tags": None}, "tags"),
    "tags-number": ({"tags": 5}, "tags"),
}


@pytest.mark.parametrize("case", sorted(OUT_OF_RANGE))
def test_out_of_range_task_fields_are_refused(store: Store, case: str) -> None:
    fields, field = OUT_OF_RANGE[case]
    with pytest.raises(InvalidInput) as raised:
        store.task_create(NewTask(**{"topic": "t", "name": "n", **fields}))
    assert raised.value.field == field
    assert store.task_list().tasks == []


def test_out_of_range_reserve_changes_nothing(store: Store) -> None:
    task = store.task_create(new())
    for fields in ({"lease_seconds": 1e300}, {"topics": 5}, {"tags": None}):
        with pytest.raises(InvalidInput):
            store.task_reserve(ReserveParams(**{"owner": OWNER, **fields}))
    assert store.task_get(task.id) == task
    with pytest.raises(InvalidInput):
        store.task_revoke(task.id, 2**63)
    with pytest.raises(InvalidInput):
        store.event_list(after=f"0.{2**63}")
    with pytest.raises(InvalidInput):
        store.task_list_leased(topics="abc")  # type: ignore[arg-type]


def test_malformed_holder_writes_are_refused(store: Store) -> None:
    store.task_create(new())
    task, lease = reserve_one(store)
    naive = datetime(2030, 1, 1)
    calls = [
        (lambda: store.lease_extend(lease, 10, now=naive), "now"),
        (lambda: store.task_complete(lease, now="yesterday"), "now"),  # type: ignore[arg-type]
        (lambda: store.task_fail(lease, "boom"), "error"),  # type: ignore[arg-type]
        (lambda: store.task_complete(Lease({"id": 1}, OWNER, 1)), "lease.task_id"),  # type: ignore[arg-type]
        (lambda: store.task_release(Lease(task.id, OWNER, 0)), "lease.token"),
        (lambda: store.task_snooze(("x", OWNER, 1), 5), "lease"),  # type: ignore[arg-type]
        (lambda: store.lease_extend_many("abc", 10), "leases"),  # type: ignore[arg-type]
    ]
    for call, field in calls:
        with pytest.raises(InvalidInput) as raised:
            call()
        assert raised.value.field == field
    assert store.task_get(task.id) == task


def test_oversized_error_text_is_cut_not_refused(store: Store) -> None:
    store.task_create(new())
    _, lease = reserve_one(store)
    failed = store.task_fail(lease, TaskError("E" * 500, "m" * 200_000, "t" * 200_000))
    assert failed.error is not None
    assert len(failed.error.message) == 64 * 1024
    assert len(failed.error.type) == MAX_NAME_LENGTH


@pytest.mark.parametrize("bad", ["abc.é", "W1sxLCJ4Il0.0000000000000000"])
def test_non_ascii_or_forged_cursor_is_refused(store: Store, bad: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.task_list(cursor=bad)
    assert raised.value.field == "cursor"


def test_forged_cursor_with_valid_seal_but_wrong_shape_is_refused(store: Store) -> None:
    import base64
    import hashlib
    import hmac

    body = b'[1,"x"]'
    seal = hmac.new(b"tenure-cursor-v1", body, hashlib.blake2b).hexdigest()[:16]
    forged = base64.urlsafe_b64encode(body).decode().rstrip("=") + "." + seal
    with pytest.raises(InvalidInput, match="cursor"):
        store.task_list(cursor=forged)
