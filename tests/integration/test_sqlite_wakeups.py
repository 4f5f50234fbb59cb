"""Idle workers on SQLite are woken within milliseconds of an enqueue, by
watching the database's change counter (SQLite has no notifications)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tenure import open_store
from tenure.store import NewTask
from tenure.store.sqlite import watching
from tenure.store.sqlite.backend import SQLiteStore


def waiter(store: SQLiteStore, topics: list[str] | None, timeout: float) -> dict[str, object]:
    """Start ``task_wait`` in a thread; the dict gets its answer and when."""
    outcome: dict[str, object] = {}
    ready = threading.Event()

    def wait() -> None:
        store.task_wait(topics, 0)  # learn the current counter
        ready.set()
        outcome["woken"] = store.task_wait(topics, timeout)
        outcome["at"] = time.monotonic()

    thread = threading.Thread(target=wait)
    thread.start()
    assert ready.wait(10)
    outcome["thread"] = thread
    return outcome


def test_an_enqueue_by_another_process_wakes_the_waiter(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'w.db'}"
    watcher, writer = open_store(url), open_store(url)
    assert isinstance(watcher, SQLiteStore)
    outcome = waiter(watcher, ["mail"], timeout=20)
    sent = time.monotonic()
    writer.task_create(NewTask(topic="mail", name="send"))
    outcome["thread"].join(20)  # type: ignore[attr-defined]
    assert outcome["woken"] is True
    assert float(outcome["at"]) - sent < 5  # milliseconds in practice; never the timeout


def test_a_commit_that_enqueues_nothing_for_the_topics_does_not_wake(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'w.db'}"
    watcher, writer = open_store(url), open_store(url)
    assert isinstance(watcher, SQLiteStore)
    outcome = waiter(watcher, ["mail"], timeout=0.5)
    writer.task_create(NewTask(topic="other", name="send"))
    writer.task_create(NewTask(topic="mail", name="later", delay=3600))
    outcome["thread"].join(20)  # type: ignore[attr-defined]
    assert outcome["woken"] is False


def test_without_commits_the_wait_lasts_its_timeout(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'w.db'}")
    started = time.monotonic()
    assert store.task_wait(None, 0.2) is False
    assert time.monotonic() - started >= 0.2


def test_a_subscribed_event_is_set_by_an_enqueue_of_its_topic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'w.db'}"
    watcher, writer = open_store(url), open_store(url)
    wake = threading.Event()
    stop = watcher.task_notify(["mail"], wake)
    try:
        writer.task_create(NewTask(topic="mail", name="send"))
        assert wake.wait(5)
    finally:
        stop()


def test_a_waiter_looks_less_often_after_a_quiet_second_and_often_again_after_news(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'w.db'}"
    watcher, writer = open_store(url), open_store(url)
    pauses: list[float] = []
    real_sleep, waiter = time.sleep, threading.get_ident()

    def sleep(seconds: float) -> None:  # the time module's: only the waiter's are counted
        if threading.get_ident() == waiter:
            pauses.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(watching.time, "sleep", sleep)
    assert watcher.task_wait(["mail"], watching.QUIET_AFTER + 0.3) is False
    assert pauses[0] == watching.WATCH_INTERVAL
    assert pauses[-2] == watching.QUIET_INTERVAL  # the last may be cut by the timeout

    threading.Timer(0.1, writer.task_create, [NewTask(topic="mail", name="send")]).start()
    assert watcher.task_wait(["mail"], 20) is True
    pauses.clear()
    assert watcher.task_wait(["mail"], 0.05) is False  # nothing new since
    assert set(pauses[:-1]) == {watching.WATCH_INTERVAL}  # news just came: looking often
