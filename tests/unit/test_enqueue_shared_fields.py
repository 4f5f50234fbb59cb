"""A batch's shared fields are checked once per run of equal ones, and a field
that changes along the batch is still checked: a bad value anywhere is refused
with the index of its task, as before, and a good batch stores every task's
own fields."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tenure import InvalidInput
from tenure.store import NewTask, open_store

SHARED_TOPIC = "topic"
SHARED_TAGS = frozenset({"b", "a"})


def batch(**changed: Any) -> list[NewTask]:
    """Ten tasks sharing every field (the same objects); task 6 with ``changed``."""
    tasks = [
        NewTask(topic=SHARED_TOPIC, name="n", tags=SHARED_TAGS, data={"i": i}) for i in range(10)
    ]
    fields = {"topic": SHARED_TOPIC, "name": "n", "tags": SHARED_TAGS, "data": {"i": 6}}
    tasks[6] = NewTask(**{**fields, **changed})
    return tasks


BAD: list[tuple[str, Any]] = [
    ("topic", ""),
    ("topic", "a\x00b"),
    ("name", 5),
    ("tags", frozenset({""})),
    ("tags", "not-a-collection"),
    ("priority", True),
    ("priority", 2**40),
    ("max_attempts", 0),
    ("timeout", -1.0),
    ("delay", -5.0),
    ("run_at", datetime(2030, 1, 1)),  # naive
    ("description", "x" * 100_000),
    ("sub_topic", ""),
    ("group_id", ""),
]


@pytest.mark.parametrize(("field", "value"), BAD, ids=[f"{f}={v!r:.20}" for f, v in BAD])
def test_a_bad_field_in_the_middle_of_a_batch_is_refused(
    tmp_path: Path, field: str, value: Any
) -> None:
    with open_store(f"sqlite:///{tmp_path / 't.db'}") as store:
        with pytest.raises(InvalidInput) as refused:
            store.task_create_many(batch(**{field: value}))
        assert refused.value.field.startswith("tasks[6].")
        assert store.task_count() == 0


def test_each_task_keeps_its_own_fields(tmp_path: Path) -> None:
    at = datetime(2031, 1, 1, tzinfo=UTC)
    with open_store(f"sqlite:///{tmp_path / 't.db'}") as store:
        created = store.task_create_many(
            batch(topic="other", tags=frozenset({"z"}), priority=3, run_at=at)
        )
        for index, task in enumerate(created):
            assert store.task_get(task.id) == task
            assert task.data == {"i": index}
            if index == 6:
                assert (task.topic, task.tags, task.priority, task.run_at) == (
                    "other",
                    frozenset({"z"}),
                    3,
                    at,
                )
            else:
                assert (task.topic, task.tags, task.priority, task.run_at) == (
                    SHARED_TOPIC,
                    SHARED_TAGS,
                    0,
                    None,
                )
        assert len({task.id for task in created}) == 10
