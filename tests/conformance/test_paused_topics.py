"""Paused topics on each store: a paused topic's tasks are not reserved, by
any of the reserve statements (any topic, one, several), while other topics'
tasks are; a running task of it is left alone; a resume wakes the workers that
wait and lets its tasks be reserved again, in their order."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tenure import InvalidInput, Status, Store
from tenure.store import ReserveParams
from tests.conformance.support import OWNER, new, reserve_one
from tests.conftest import StoreFactory


def reserve(store: Store, topics: list[str] | None = None, limit: int = 10) -> list[str]:
    params = ReserveParams(owner=OWNER, limit=limit, topics=topics)
    return [task.id for task in store.task_reserve(params)]


@pytest.mark.parametrize(
    "topics", [None, ["mail"], ["mail", "math"]], ids=["any", "one", "several"]
)
def test_a_paused_topics_tasks_are_not_reserved_until_it_resumes(
    store: Store, topics: list[str] | None
) -> None:
    mail = store.task_create_many([new(topic="mail", priority=5) for _ in range(3)])
    math = store.task_create(new(topic="math"))
    paused = store.topic_pause("mail")
    assert paused.topic == "mail" and paused.paused_at.tzinfo is not None
    assert reserve(store, topics) == ([] if topics == ["mail"] else [math.id])
    assert store.task_list(limit=10).tasks and all(
        store.task_get(t.id).status is Status.PENDING
        for t in mail  # type: ignore[union-attr]
    )
    assert store.topic_resume("mail")
    assert reserve(store, topics) == [t.id for t in mail]


def test_a_waiting_worker_is_woken_by_a_resume(store: Store, make_store: StoreFactory) -> None:
    """A paused topic's new task may wake a waiter (a wake is never the record),
    which then reserves nothing; the resume wakes it, and it reserves the task."""
    operator = make_store()
    operator.topic_pause("mail")
    store.task_wait(["mail"], timeout=0)  # the waiter's first look
    operator.task_create(new(topic="mail"))
    store.task_wait(["mail"], timeout=0.5)
    assert reserve(store, ["mail"]) == []
    operator.topic_resume("mail")
    assert store.task_wait(["mail"], timeout=5)
    assert len(reserve(store, ["mail"])) == 1


def test_a_pause_leaves_running_tasks_to_end_and_keeps_its_first_time(store: Store) -> None:
    store.task_create(new(topic="mail"))
    _, lease = reserve_one(store, topics=["mail"])
    first = store.topic_pause("mail", now=datetime(2026, 1, 1, tzinfo=UTC))
    again = store.topic_pause("mail")
    assert again.paused_at == first.paused_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert store.task_complete(lease, {"ok": True}).status is Status.DONE
    assert [p.topic for p in store.topics_paused()] == ["mail"]
    assert store.topic_resume("mail") and not store.topic_resume("mail")
    assert store.topics_paused() == []


def test_a_topic_to_pause_is_text(store: Store) -> None:
    for wrong in ("", None, 5, "a\x00b"):
        with pytest.raises(InvalidInput, match="topic"):
            store.topic_pause(wrong)  # type: ignore[arg-type]
    assert store.topics_paused() == []
