"""Priority ageing on each store: a topic that ages takes its pending tasks
as if their priority rose by one for every so many seconds they have waited
since they became runnable, up to a most, by every reserve statement (any
topic, one, several), on the clock the reservation is made by; the raise is
computed, never written. Priority alone orders a topic without ageing, and
what holds other tasks back (a pause, a limit) holds an ageing topic's too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tenure import InvalidInput, Status, Store
from tenure.store import ReserveParams, TaskFilter, TopicAgeing
from tests.conformance.support import ERROR, OWNER, lease_of, new

WAYS = pytest.mark.parametrize(
    "topics", [None, ["mail"], ["mail", "math"]], ids=["any", "one", "several"]
)
T0 = datetime(2030, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def reserve(
    store: Store, seconds: float, topics: list[str] | None = None, limit: int = 1
) -> list[str]:
    params = ReserveParams(owner=OWNER, limit=limit, topics=topics, now=at(seconds))
    return [task.id for task in store.task_reserve(params)]


@WAYS
def test_a_waiting_task_passes_higher_priorities_once_its_raise_does(
    store: Store, topics: list[str] | None
) -> None:
    """+1 a minute: after four minutes a priority-0 task ranks 4, below a fresh
    priority-5 task; after six, 6, above one."""
    store.topic_ageing("mail", 60, most=10, now=T0)
    old = store.task_create(new(topic="mail"), now=at(0))
    first = store.task_create(new(topic="mail", priority=5), now=at(230))
    assert reserve(store, 240, topics) == [first.id]
    later = store.task_create(new(topic="mail", priority=5), now=at(350))
    assert reserve(store, 360, topics) == [old.id]
    assert reserve(store, 360, topics) == [later.id]


@WAYS
def test_the_raise_stops_at_its_most(store: Store, topics: list[str] | None) -> None:
    store.topic_ageing("mail", 60, most=2, now=T0)
    old = store.task_create(new(topic="mail"), now=at(0))
    high = store.task_create(new(topic="mail", priority=3), now=at(3590))
    assert reserve(store, 3600, topics, limit=2) == [high.id, old.id]


@WAYS
def test_without_ageing_priority_alone_orders(store: Store, topics: list[str] | None) -> None:
    assert store.topic_ageing("mail", 60, now=T0) is not None
    assert store.topic_ageing("mail", None) is None
    old = store.task_create(new(topic="mail"), now=at(0))
    high = store.task_create(new(topic="mail", priority=1), now=at(3590))
    assert reserve(store, 3600, topics, limit=2) == [high.id, old.id]


@WAYS
def test_every_priority_ages_and_ranks_with_the_other_topics(
    store: Store, topics: list[str] | None
) -> None:
    """Retries lower a task's priority: each of the priorities below is found,
    and their oldest ranked beside a topic that does not age."""
    store.topic_ageing("mail", 60, most=10, now=T0)
    low = store.task_create(new(topic="mail", priority=-2), now=at(0))  # ranks -2 + 10
    mid = store.task_create(new(topic="mail", priority=-1), now=at(500))  # -1 + 1
    fresh = store.task_create(new(topic="mail", priority=3), now=at(590))  # 3
    math = store.task_create(new(topic="math", priority=7), now=at(0))  # 7, no ageing
    order = [low, math, fresh, mid] if topics != ["mail"] else [low, fresh, mid]
    assert reserve(store, 600, topics, limit=4) == [t.id for t in order]


@WAYS
def test_a_task_ages_from_when_it_became_runnable(store: Store, topics: list[str] | None) -> None:
    store.topic_ageing("mail", 60, most=10, now=T0)
    delayed = store.task_create(new(topic="mail", run_at=at(600)), now=at(0))
    high = store.task_create(new(topic="mail", priority=2), now=at(500))
    assert reserve(store, 660, topics) == [high.id]  # waited one minute since 600: ranks 1
    assert reserve(store, 660, topics) == [delayed.id]


@WAYS
def test_a_pause_and_a_limit_hold_an_ageing_topics_tasks(
    store: Store, topics: list[str] | None
) -> None:
    store.topic_ageing("mail", 60, most=10, now=T0)
    tasks = store.task_create_many([new(topic="mail") for _ in range(3)], now=at(0))
    store.topic_pause("mail")
    assert reserve(store, 600, topics, limit=5) == []
    store.topic_resume("mail")
    store.topic_limit("mail", 2)
    assert reserve(store, 600, topics, limit=5) == [t.id for t in tasks[:2]]
    waiting = store.task_get(tasks[2].id)
    assert waiting is not None and (waiting.status, waiting.attempts) == (Status.PENDING, 0)


def test_an_ageing_topics_tasks_keep_their_turns(store: Store) -> None:
    """Within a rank, fair keys take turns as they do without ageing."""
    store.topic_ageing("mail", 60, most=10, now=T0)
    a = store.task_create_many([new(topic="mail", fair_key="a") for _ in range(3)], now=at(0))
    b = store.task_create(new(topic="mail", fair_key="b"), now=at(0))
    taken = reserve(store, 30, ["mail"], limit=4)
    assert taken == [a[0].id, b.id, a[1].id, a[2].id]


def test_ageing_is_kept_listed_and_checked(store: Store) -> None:
    set_ = store.topic_ageing("mail", 90.0, most=5, now=T0)
    assert set_ == TopicAgeing("mail", 90.0, 5, T0)
    store.topic_ageing("math", 30, now=T0)
    assert [(a.topic, a.every_seconds, a.most) for a in store.topic_ageings()] == [
        ("mail", 90.0, 5),
        ("math", 30.0, 10),
    ]
    store.topic_ageing("math", None)
    assert [a.topic for a in store.topic_ageings()] == ["mail"]
    for every, most, field in ((0, 5, "every"), (60, 0, "most"), ("x", 5, "every"),
                               (1e-300, 5, "every")):  # fmt: skip
        with pytest.raises(InvalidInput, match=field):
            store.topic_ageing("mail", every, most=most)  # type: ignore[arg-type]
    assert store.task_count(TaskFilter(topic="mail")) == 0


def test_a_retried_task_ages_from_its_retry(store: Store) -> None:
    """Its earlier wait and run do not count: a retry without a backoff makes
    it runnable at once, and it waits from there."""
    store.topic_ageing("mail", 60, most=10, now=T0)
    task = store.task_create(new(topic="mail", max_attempts=2), now=at(0))
    [taken] = store.task_reserve(ReserveParams(owner=OWNER, limit=1, now=at(600)))
    assert taken.id == task.id
    store.task_fail(lease_of(taken), ERROR, retry_in=0, priority_step=0, now=at(610))
    high = store.task_create(new(topic="mail", priority=2), now=at(620))
    assert reserve(store, 680, ["mail"]) == [high.id]  # waited 70 s: ranks 1, below 2


def test_a_priority_ranks_by_its_longest_wait_and_keeps_its_turns(store: Store) -> None:
    """Key a's tasks waited ten minutes, key b's one arrived now: the priority
    ranks by the longest wait, and b's task keeps its turn among a's."""
    store.topic_ageing("mail", 60, most=10, now=T0)
    a = store.task_create_many([new(topic="mail", fair_key="a") for _ in range(3)], now=at(0))
    b = store.task_create(new(topic="mail", fair_key="b"), now=at(600))
    high = store.task_create(new(topic="mail", priority=5), now=at(600))
    taken = reserve(store, 600, ["mail"], limit=5)
    assert taken == [a[0].id, b.id, a[1].id, a[2].id, high.id]
