"""A task's meta, on each store: names and values (text) stored with it and
found by, whichever way the task was written (one, a batch, a streamed batch,
a flow), and refused whole when it is not text."""

from __future__ import annotations

import pytest

from tenure import InvalidInput
from tenure.store import NewGate, NewTask, Store, TaskFilter
from tenure.store.validate import MAX_META

ACME = {"customer": "c-42", "region": "eu"}


def with_meta(meta: dict[str, str] | None, **fields: object) -> NewTask:
    return NewTask(topic="m", name="job", meta=meta, **fields)  # type: ignore[arg-type]


def found(store: Store, **pairs: str) -> list[str]:
    filters = TaskFilter(meta=tuple(pairs.items()))
    listed = [t.id for t in store.task_list(filters, limit=1000).tasks]
    assert store.task_count(filters) == len(listed)
    return listed


def test_meta_is_kept_and_found_by_every_pair(store: Store) -> None:
    acme = store.task_create(with_meta(ACME))
    other = store.task_create(with_meta({"customer": "c-43", "region": "eu"}))
    bare = store.task_create(with_meta(None))
    assert acme.meta == ACME and store.task_get(acme.id).meta == ACME  # type: ignore[union-attr]
    assert store.task_get(bare.id).meta is None  # type: ignore[union-attr]
    assert found(store, customer="c-42") == [acme.id]
    assert found(store, region="eu") == [acme.id, other.id]
    assert found(store, region="eu", customer="c-43") == [other.id]
    assert found(store, region="us") == [] and found(store, customer="c-42", region="us") == []
    newest = store.task_list(TaskFilter(meta=(("region", "eu"),)), limit=1, newest_first=True)
    assert [t.id for t in newest.tasks] == [other.id]


def test_meta_of_a_large_batch_and_of_a_flow(store: Store) -> None:
    # Hundreds of tasks: PostgreSQL streams them with COPY.
    batch = store.task_create_many([with_meta({"batch": str(n % 3)}) for n in range(300)])
    assert len(found(store, batch="1")) == 100
    assert store.task_get(batch[4].id).meta == {"batch": "1"}  # type: ignore[union-attr]
    flow = store.flow_create(
        [with_meta({"flow": "a"}), with_meta({"flow": "b"})], [NewGate("g", (0,), (1,))]
    )
    assert [store.task_get(t.id).meta for t in flow] == [{"flow": "a"}, {"flow": "b"}]  # type: ignore[union-attr]
    assert found(store, flow="b") == [flow[1].id]


@pytest.mark.parametrize(
    ("meta", "field"),
    [
        ({"customer": 42}, "meta['customer']"),
        ({"": "x"}, "meta names"),
        ({"k": "v\x00"}, "meta['k']"),
        ({f"k{n}": "v" for n in range(MAX_META + 1)}, "meta"),
        (["customer", "c-42"], "meta"),
    ],
)
def test_meta_that_is_not_names_and_text_is_refused_whole(
    store: Store, meta: object, field: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        store.task_create_many([with_meta(ACME), with_meta(meta)])  # type: ignore[arg-type]
    assert refused.value.field == f"tasks[1].{field}"  # the batch's second task
    pairs = tuple(meta.items()) if isinstance(meta, dict) else meta
    with pytest.raises(InvalidInput):
        store.task_list(TaskFilter(meta=pairs))  # type: ignore[arg-type]
    assert store.task_list(limit=10).tasks == []


def test_an_empty_meta_is_none(store: Store) -> None:
    task = store.task_create(with_meta({}))
    assert task.meta is None and store.task_get(task.id).meta is None  # type: ignore[union-attr]
