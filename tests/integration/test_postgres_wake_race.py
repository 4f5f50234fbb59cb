"""No wake-up is lost to the race between a waiter registering and a producer
committing: real OS processes, and no poll to hide a miss.

PostgreSQL's triggers notify only while a waiter is registered (see
``tenure.store.postgres.wanting``). A waiter process opens a store (so a
registration of its own, made under the lock) every few tasks, looks for work,
says it is idle, and waits with no poll at all. A producer process enqueues one
task at a time, at random moments, and waits for it to be picked up before the
next: a lost wake-up leaves its task pending until the producer gives up on it
(:data:`STALL`), counted as a miss. Meanwhile a second producer commits on a
topic nobody waits for, so commits keep taking the triggers' lock.

The same run with a waiter that does not look again after registering (the
race left open) must miss: the test can fail.
"""

from __future__ import annotations

import multiprocessing
import queue
import random
import threading
import time
from multiprocessing.synchronize import Event as ProcessEvent
from typing import Any

import pytest

from tenure.store import NewTask, ReserveParams, TaskFilter
from tenure.store.postgres.backend import PostgresStore
from tenure.store.postgres.schema import queries
from tenure.task import Status
from tests.conftest import _empty_postgres

Q = queries()

ROUNDS = 200
"""Tasks the watched producer enqueues, one at a time."""
STALL = 3.0
"""Seconds after which a task not picked up is a lost wake-up (pickup takes ms)."""
PAUSE = 0.06
"""Most seconds the producer pauses between tasks: its commits land anywhere
in the waiter's cycle of opening a store, registering, looking and waiting."""

SLOW = 0.02
"""Most seconds the waiter takes between its look and saying it is idle."""

REGISTERING = "SET LOCAL lock_timeout = '10s'"
"""The waiter's registrations wait this long for the triggers' lock. A
registration refused after the shipped 100 ms leaves its waiter to poll (see
``test_postgres_notify``), and this waiter never polls: on a loaded machine a
refusal would count as a lost wake-up that is none."""

CONTEXT = multiprocessing.get_context("spawn")


def produce(url: str, rounds: int, turn: Any, results: Any, until_miss: bool) -> None:
    """Enqueue ``rounds`` tasks one by one, each once the last was picked up, on
    the topic the waiter takes this turn (or until one is missed)."""
    store = PostgresStore(url, role="producer")
    misses = 0
    for _ in range(rounds):
        time.sleep(random.uniform(0, PAUSE))
        task = store.task_create(NewTask(topic=f"race-{turn.value}", name="n"))
        deadline = time.monotonic() + STALL
        while (found := store.task_get(task.id)) is not None and found.status is Status.PENDING:
            if time.monotonic() > deadline:
                misses += 1
                break
            time.sleep(0.002)
        if misses and until_miss:
            break
    store.close()
    results.put(misses)


def make_noise(url: str, stop: ProcessEvent) -> None:
    """Commit tasks on a topic nobody waits for, until stopped."""
    store = PostgresStore(url, role="noise")
    while not stop.is_set():
        store.task_create(NewTask(topic="unheard", name="n"))
    store.close()


def wait_for_work(url: str, stop: ProcessEvent, looks_again: bool, turn: Any) -> None:
    """Take the producer's tasks, each on a topic of its own: each one is waited
    for by a new registration."""
    Q["wake_lock_timeout"] = REGISTERING  # this process's copy of the queries only
    store = PostgresStore(url, role="waiter")
    while not stop.is_set():
        topic = f"race-{turn.value}"
        wake = threading.Event()
        wakeups = store.task_notify([topic], wake)
        found = take_one(store, topic, wakeups, wake, stop, looks_again)
        wakeups()
        if found:
            # The next topic is set before the task is reserved, which the
            # producer waits for: its next task is on the next topic.
            turn.value += 1
            store.task_reserve(ReserveParams(owner="waiter", topics=[topic], limit=10))
    store.close()


def take_one(
    store: PostgresStore,
    topic: str,
    wakeups: Any,
    wake: threading.Event,
    stop: ProcessEvent,
    looks_again: bool,
) -> bool:
    """Wait until the topic has a task, on wake-ups only; False if stopped."""
    while not stop.is_set():
        wake.clear()
        looked = time.monotonic()
        if store.task_count(TaskFilter(topic=topic, status=Status.PENDING)):
            return True
        time.sleep(random.uniform(0, SLOW))  # a slow worker: the race's window widens
        if wakeups.idle(looked) and looks_again:
            continue
        while not wake.wait(0.1):  # no look on a timeout: only to notice a stop
            if stop.is_set():
                return False
    return False


def race(url: str, looks_again: bool, rounds: int = ROUNDS) -> tuple[int, int]:
    """The lost wake-ups of one run, and how many registrations the waiter made."""
    stop, results, turn = CONTEXT.Event(), CONTEXT.Queue(), CONTEXT.Value("i", 0)
    waiter = CONTEXT.Process(target=wait_for_work, args=(url, stop, looks_again, turn))
    noise = CONTEXT.Process(target=make_noise, args=(url, stop))
    until_miss = not looks_again  # one miss shows the race is open
    producer = CONTEXT.Process(target=produce, args=(url, rounds, turn, results, until_miss))
    for process in (waiter, noise, producer):
        process.start()
    try:
        misses = outcome(results, [waiter, noise, producer], rounds * (STALL + PAUSE) + 60)
    finally:
        stop.set()
    for process in (producer, noise, waiter):
        process.join(30)
        assert process.exitcode == 0, f"{process.name} exited with {process.exitcode}"
    return misses, turn.value


def outcome(results: Any, processes: list[Any], timeout: float) -> int:
    """The producer's answer, failing at once if any process died before it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return int(results.get(timeout=0.5))
        except queue.Empty:
            dead = [p.name for p in processes if p.exitcode is not None]
            assert not dead, f"{dead} exited before the producer was done"
    raise AssertionError(f"the producer was not done within {timeout:.0f}s")


@pytest.fixture
def url(postgres_url: str) -> str:
    _empty_postgres(postgres_url)
    return postgres_url


def test_a_waiter_that_looks_again_after_registering_misses_nothing(url: str) -> None:
    misses, registrations = race(url, looks_again=True)
    assert registrations == ROUNDS
    assert misses == 0, f"{misses} of {ROUNDS} tasks woke no one within {STALL}s"


def test_a_waiter_that_does_not_look_again_misses(url: str) -> None:
    """The race is real: left open, some task commits unseen by both sides."""
    misses, _ = race(url, looks_again=False)
    assert misses > 0
