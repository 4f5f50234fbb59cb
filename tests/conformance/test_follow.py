"""The follower API (``tenure.events.Events``) on every store: it yields each
event once, in order, waits for new ones and is woken when they commit, runs
callbacks on a thread, and serves asyncio code."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Iterator

import pytest

from tenure import Store
from tenure.errors import InvalidInput
from tenure.events import EventFilter, Events
from tenure.store import NewTask
from tenure.store.types import Event
from tests.conftest import StoreFactory


def create(store: Store, *ids: str, topic: str = "t") -> None:
    for task_id in ids:
        store.task_create(NewTask(topic=topic, name="n", id=task_id))


def take(events: Iterator[Event], n: int, timeout: float = 10) -> list[Event]:
    """The next ``n`` events, read on a thread so a follower that blocks for
    ever fails the test instead of hanging it."""
    got: list[Event] = []
    reader = threading.Thread(
        target=lambda: got.extend(next(events) for _ in range(n)), daemon=True
    )
    reader.start()
    reader.join(timeout)
    assert not reader.is_alive(), f"only {len(got)} of {n} events came within {timeout} s"
    return got


def test_follow_yields_old_events_then_new_ones_as_they_commit(
    store: Store, make_store: StoreFactory
) -> None:
    create(store, "a", "b")
    reading = make_store()
    reading.event_poll = 120.0  # no poll within the test: only a wake-up delivers
    follower = Events(lambda: reading).follow()
    assert [e.task_id for e in take(follower, 2)] == ["a", "b"]
    writer = make_store()  # another connection, as another process would be
    threading.Timer(0.3, create, (writer, "c")).start()
    [new] = take(follower, 1)
    assert new.task_id == "c" and new.kind == "created"


def test_a_resumed_follow_starts_after_its_cursor(store: Store) -> None:
    create(store, "a", "b", "c")
    events = Events(lambda: store)
    [first] = take(events.follow(), 1)
    assert [e.task_id for e in take(events.follow(first.cursor), 2)] == ["b", "c"]


def test_filters_leave_events_out_but_move_the_cursor_past_them(store: Store) -> None:
    create(store, "a", topic="x")
    create(store, "b", topic="y")
    create(store, "c", topic="x")
    events = Events(lambda: store)
    assert [e.task_id for e in take(events.follow(topics=["x"]), 2)] == ["a", "c"]
    found, cursor = events.page(topics=["y"])
    assert [e.task_id for e in found] == ["b"]
    assert cursor == store.event_list()[-1].cursor  # past "c", which did not match
    assert events.page(cursor)[0] == []


def test_page_and_tail_stop_at_their_limits(store: Store) -> None:
    create(store, *[f"t{n}" for n in range(10)])
    events = Events(lambda: store)
    found, cursor = events.page(limit=4)
    assert [e.task_id for e in found] == ["t0", "t1", "t2", "t3"] and cursor == found[-1].cursor
    newest, head = events.tail(3)
    assert [e.task_id for e in newest] == ["t7", "t8", "t9"] and head == newest[-1].cursor


def test_subscribe_runs_the_callback_for_each_event_until_stopped(store: Store) -> None:
    seen: list[str] = []
    done = threading.Event()

    def callback(event: Event) -> None:
        if event.task_id == "boom":
            raise RuntimeError("a subscriber's bug")
        seen.append(event.task_id)
        if event.task_id == "last":
            done.set()

    subscription = Events(lambda: store).subscribe(callback)
    create(store, "a", "boom", "last")
    assert done.wait(10), seen
    subscription.stop(timeout=5)
    assert not subscription.running and subscription.error is None
    assert seen == ["a", "last"]  # a failing callback is logged, the next still comes
    assert subscription.cursor == store.event_list()[-1].cursor


def test_afollow_serves_asyncio_code(store: Store) -> None:
    create(store, "a")

    async def follow() -> list[str]:
        got = []
        async for event in Events(lambda: store).afollow():
            got.append(event.task_id)
            if event.task_id == "a":
                await asyncio.to_thread(create, store, "b")
            else:
                return got
        raise AssertionError("afollow ended")

    assert asyncio.run(asyncio.wait_for(follow(), 10)) == ["a", "b"]


def test_idle_async_followers_hold_no_thread(store: Store) -> None:
    """Followers waiting for events wait on the event loop, not on executor
    threads: with four of them idle and a two-thread executor, other work on the
    executor still runs at once (a follower used to hold a thread for each
    wait, up to ``event_poll`` seconds, here 30)."""
    store.event_poll = 30.0
    create(store, "a")

    async def idle_follower(seen: asyncio.Event) -> None:
        async for event in Events(lambda: store).afollow():
            if event.task_id == "a":
                seen.set()

    async def main() -> list[str]:
        asyncio.get_running_loop().set_default_executor(
            concurrent.futures.ThreadPoolExecutor(max_workers=2)
        )
        seen = [asyncio.Event() for _ in range(4)]
        followers = [asyncio.create_task(idle_follower(s)) for s in seen]
        await asyncio.wait_for(asyncio.gather(*(s.wait() for s in seen)), 10)
        await asyncio.sleep(0.2)  # each has gone back to waiting for more
        try:
            await asyncio.wait_for(asyncio.to_thread(create, store, "b"), 5)
            return [event.task_id for event in store.event_list()]
        finally:
            for follower in followers:
                follower.cancel()
            await asyncio.gather(*followers, return_exceptions=True)

    assert asyncio.run(main()) == ["a", "b"]


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ({"kinds": ["donee"]}, "kinds"),
        ({"topics": "emails"}, "topics"),
        ({"task_ids": [""]}, "task_ids"),
    ],
)
def test_bad_filters_are_refused_before_following(filters: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        EventFilter.of(**filters)  # type: ignore[arg-type]
    assert refused.value.field == field


def test_a_garbled_cursor_is_refused_when_following_begins(store: Store) -> None:
    with pytest.raises(InvalidInput) as refused:
        next(Events(lambda: store).follow("nonsense"))
    assert refused.value.field == "after"


class _SlowToRegister:
    """The store, with ``event_notify`` held until released: a follower can be
    cancelled while its registration is under way on the executor."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.entered, self.release = threading.Event(), threading.Event()
        self.registered, self.undone = threading.Event(), threading.Event()

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def event_notify(self, wake: threading.Event) -> Callable[[], None]:
        self.entered.set()
        self.release.wait(10)
        stop = self.store.event_notify(wake)
        self.registered.set()

        def unsubscribe() -> None:
            stop()
            self.undone.set()

        return unsubscribe


def test_a_follower_cancelled_while_registering_leaves_no_registration(store: Store) -> None:
    slow = _SlowToRegister(store)
    events = Events(lambda: slow)  # type: ignore[arg-type, return-value]

    async def main() -> None:
        follower = asyncio.ensure_future(anext(events.afollow()))
        await asyncio.to_thread(slow.entered.wait, 10)
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
        slow.release.set()
        await asyncio.to_thread(slow.registered.wait, 10)
        await asyncio.to_thread(slow.undone.wait, 5)

    asyncio.run(main())
    assert slow.registered.is_set()
    assert slow.undone.is_set(), "the registration outlived its cancelled follower"
