"""Wake-ups on PostgreSQL: ``task_wait`` returns as soon as a task is created
from another connection, sleeps out its timeout otherwise, hears only committed
tasks, and keeps listening after the server drops its connection."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from tenure.store import NewTask
from tenure.store.postgres.backend import PostgresStore
from tests.conftest import _empty_postgres

WAKE_BOUND = 5.0
"""Seconds within which a waiter must wake; its own timeout is far longer."""

LONG = 60.0


@pytest.fixture
def url(postgres_url: str) -> str:
    _empty_postgres(postgres_url)
    return postgres_url


@pytest.fixture
def waiter(url: str) -> Iterator[PostgresStore]:
    store = PostgresStore(url, role="waiter")
    assert store.listen(timeout=10)
    yield store
    store.close()


@pytest.fixture
def producer(url: str) -> Iterator[PostgresStore]:
    """Another process's store: its own pool, its own connections."""
    store = PostgresStore(url, role="producer")
    yield store
    store.close()


class Waiting:
    """``task_wait`` running in a thread; ``result`` blocks until it returns."""

    def __init__(self, wait: Callable[[], bool]) -> None:
        self._wait = wait
        self._done = threading.Event()
        self.woke: bool | None = None
        self.seconds = 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        started = time.monotonic()
        self.woke = self._wait()
        self.seconds = time.monotonic() - started
        self._done.set()

    def result(self, timeout: float = WAKE_BOUND) -> bool | None:
        assert self._done.wait(timeout), f"task_wait did not return within {timeout} s"
        return self.woke


def test_wakes_when_another_connection_creates_a_task(
    waiter: PostgresStore, producer: PostgresStore
) -> None:
    waiting = Waiting(lambda: waiter.task_wait(["emails"], LONG))
    producer.task_create(NewTask(topic="emails", name="send"))
    assert waiting.result() is True
    assert waiting.seconds < WAKE_BOUND


def test_any_topic_wakes_a_waiter_for_every_topic(
    waiter: PostgresStore, producer: PostgresStore
) -> None:
    waiting = Waiting(lambda: waiter.task_wait(None, LONG))
    producer.task_create(NewTask(topic="whatever", name="n"))
    assert waiting.result() is True


def test_times_out_without_a_task_for_its_topics(
    waiter: PostgresStore, producer: PostgresStore
) -> None:
    producer.task_create(NewTask(topic="elsewhere", name="n"))
    started = time.monotonic()
    assert waiter.task_wait(["quiet"], 0.3) is False
    assert time.monotonic() - started >= 0.3


def test_a_notification_between_waits_is_not_lost(
    waiter: PostgresStore, producer: PostgresStore
) -> None:
    """A task created while the worker was busy (not waiting) wakes its next wait."""
    assert waiter.task_wait(["busy"], 0) is False
    producer.task_create(NewTask(topic="busy", name="n"))
    assert Waiting(lambda: waiter.task_wait(["busy"], LONG)).result() is True


def test_rolled_back_task_wakes_no_one(url: str, waiter: PostgresStore) -> None:
    with psycopg.connect(url) as caller:
        waiter.task_create(NewTask(topic="maybe", name="n"), connection=caller)
        caller.rollback()
    assert waiter.task_wait(["maybe"], 0.3) is False


def listener_pids(url: str) -> set[int]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name = 'tenure-waiter-listener'"
        ).fetchall()
    return {pid for (pid,) in rows}


def the_listener_pid(url: str, timeout: float = 30.0) -> int:
    """The pid of the one listening session, once it is the only one listed.

    A previous test's listener closed its connection, but its server process may
    still be listed for a moment while it exits: wait until it is gone.
    """
    deadline = time.monotonic() + timeout
    while len(pids := listener_pids(url)) != 1:
        assert time.monotonic() < deadline, f"listening sessions: {pids}"
        time.sleep(0.05)
    [pid] = pids
    return pid


def test_listener_reconnects_after_its_connection_is_killed(
    url: str, waiter: PostgresStore, producer: PostgresStore
) -> None:
    old = the_listener_pid(url)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s, 5000)", [old])
    # Tasks may have been created while no one listened: waiters are woken.
    assert Waiting(lambda: waiter.task_wait(["after"], LONG)).result() is True
    new_pids = listener_pids(url)
    assert len(new_pids) == 1 and old not in new_pids
    waiting = Waiting(lambda: waiter.task_wait(["after"], LONG))
    producer.task_create(NewTask(topic="after", name="n"))
    assert waiting.result() is True


def test_close_wakes_waiters(waiter: PostgresStore) -> None:
    waiting = Waiting(lambda: waiter.task_wait(["never"], LONG))
    waiter.close()
    assert waiting.result() is False


def test_bad_arguments_are_refused(waiter: PostgresStore) -> None:
    from tenure import InvalidInput

    bad: list[tuple[Any, Any]] = [(["t"], -1), ("topic", 1), ([""], 1)]
    for topics, timeout in bad:
        with pytest.raises(InvalidInput):
            waiter.task_wait(topics, timeout)


def test_subscribed_events_are_set_for_their_topics_only(
    waiter: PostgresStore, producer: PostgresStore
) -> None:
    mail, other = threading.Event(), threading.Event()
    stop_mail = waiter.task_notify(["mail"], mail)
    stop_other = waiter.task_notify(["other"], other)
    try:
        # Notifications are heard in commit order: once "other" is heard, a
        # notification for "mail" sent before it would have been heard too.
        producer.task_create(NewTask(topic="other", name="n"))
        assert other.wait(WAKE_BOUND)
        assert not mail.is_set()
        producer.task_create(NewTask(topic="mail", name="n"))
        assert mail.wait(WAKE_BOUND)
        stop_mail()
        mail.clear()
        other.clear()
        producer.task_create(NewTask(topic="mail", name="n"))
        producer.task_create(NewTask(topic="other", name="n"))
        assert other.wait(WAKE_BOUND)
        assert not mail.is_set()  # unsubscribed
    finally:
        stop_other()
