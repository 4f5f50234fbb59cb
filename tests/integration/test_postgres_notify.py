"""Wake-ups on PostgreSQL: ``task_wait`` returns as soon as a task is created
from another connection, sleeps out its timeout otherwise, hears only committed
tasks, and keeps listening after the server drops its connection."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tenure.store import NewTask
from tenure.store.postgres import wanting
from tenure.store.postgres.backend import PostgresStore
from tests.conftest import _empty_postgres
from tests.integration.waiting import WAKE_BOUND, Waiting, heard

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


def test_wakes_when_another_connection_creates_a_task(
    waiter: PostgresStore, producer: PostgresStore
) -> None:
    waiting = Waiting(waiter, ["emails"], LONG)
    producer.task_create(NewTask(topic="emails", name="send"))
    assert waiting.result() is True
    assert waiting.seconds < WAKE_BOUND


def test_any_topic_wakes_a_waiter_for_every_topic(
    waiter: PostgresStore, producer: PostgresStore
) -> None:
    waiting = Waiting(waiter, None, LONG)
    producer.task_create(NewTask(topic="whatever", name="n"))
    assert waiting.result() is True


def test_times_out_without_a_task_for_its_topics(
    waiter: PostgresStore, producer: PostgresStore
) -> None:
    assert waiter.task_wait(["quiet"], 0) is True  # registered now: look first
    producer.task_create(NewTask(topic="elsewhere", name="n"))
    started = time.monotonic()
    assert waiter.task_wait(["quiet"], 0.3) is False
    assert time.monotonic() - started >= 0.3


def test_a_notification_between_waits_is_not_lost(
    waiter: PostgresStore, producer: PostgresStore
) -> None:
    """A task created while the worker was busy (not waiting) wakes its next
    wait, while its registration lives."""
    assert waiter.task_wait(["busy"], 0) is True  # registered now: look first
    assert waiter.task_wait(["busy"], 0) is False
    producer.task_create(NewTask(topic="busy", name="n"))
    started = time.monotonic()
    assert waiter.task_wait(["busy"], LONG) is True
    assert time.monotonic() - started < WAKE_BOUND


def test_rolled_back_task_wakes_no_one(url: str, waiter: PostgresStore) -> None:
    with psycopg.connect(url) as caller:
        waiter.task_create(NewTask(topic="maybe", name="n"), connection=caller)
        caller.rollback()
    assert waiter.task_wait(["maybe"], 0) is True  # registered now: look first
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
    waiting = Waiting(waiter, ["after"], LONG)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s, 5000)", [old])
    # Tasks may have been created while no one listened: waiters are woken.
    assert waiting.result() is True
    new_pids = listener_pids(url)
    assert len(new_pids) == 1 and old not in new_pids
    waiting = Waiting(waiter, ["after"], LONG)
    producer.task_create(NewTask(topic="after", name="n"))
    assert waiting.result() is True


def test_close_wakes_waiters(waiter: PostgresStore) -> None:
    waiting = Waiting(waiter, ["never"], LONG)
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
    stop_mail.idle(time.monotonic())
    stop_other.idle(time.monotonic())
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


def test_an_enqueue_at_repeatable_read_wakes_a_waiter_registered_after_its_snapshot(
    url: str, waiter: PostgresStore, producer: PostgresStore
) -> None:
    """Its snapshot predates the registration, so it cannot see it: it notifies
    unchecked."""
    with psycopg.connect(url) as caller:
        caller.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        caller.execute("SELECT 1")  # the transaction's snapshot is taken here
        waiting = Waiting(waiter, ["repeatable"], LONG)
        producer.task_create(NewTask(topic="repeatable", name="n"), connection=caller)
        caller.commit()
    assert waiting.result() is True


def test_no_one_is_notified_while_no_one_waits(url: str, producer: PostgresStore) -> None:
    """The point of registering: a commit with nobody waiting sends nothing."""
    with psycopg.connect(url, autocommit=True) as listening:
        listening.execute("LISTEN tenure_tasks")
        listening.execute("LISTEN tenure_events")
        producer.task_create(NewTask(topic="alone", name="n"))
        assert heard(listening, url) == []
        registered = PostgresStore(url, role="waiter")
        try:
            assert registered.task_wait(["alone"], 0) is True  # registered now
            producer.task_create(NewTask(topic="alone", name="n"))
            assert [n.payload for n in heard(listening, url)] == ["alone"]
        finally:
            registered.close()


def test_a_waiter_whose_registration_failed_looks_again_once_one_is_made(
    url: str, producer: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the lock is held elsewhere, registering fails and the task below is
    committed unnotified; the renewal that succeeds wakes the waiter to look."""
    monkeypatch.setattr(wanting, "RENEW", 0.3)
    store = PostgresStore(url, role="waiter")
    try:
        assert store.listen(timeout=10)
        with psycopg.connect(url, autocommit=True) as holder:
            holder.execute("SELECT pg_advisory_lock_shared(hashtext('tenure.wake'))")
            store.task_wait(["late"], 0)  # registering is refused: lock_timeout
            # So nothing is registered, and this task's commit notifies no one.
            assert holder.execute("SELECT count(*) FROM tenure.wake_wanted").fetchone() == (0,)
            producer.task_create(NewTask(topic="late", name="n"))
            waiting = Waiting(store, ["late"], LONG)
            holder.execute("SELECT pg_advisory_unlock_shared(hashtext('tenure.wake'))")
        assert waiting.result() is True
    finally:
        store.close()
