"""Producers: separate processes that enqueue probe tasks and journal every
enqueue that returned.

``python -m chaos.producers URL WORKLOAD_JSON`` enqueues ``count`` probe tasks
through the App's public API (``enqueue_many`` in batches, at a steady rate if
asked), and after each call that returned appends one ``enq`` record with the
ids it returned and their priority: once ``enqueue`` returns, the tasks must be
in the store (I2), whatever happens to the server afterwards. A call that
raises is journaled as ``enq-error`` and its tasks count as never acknowledged;
the producer tries again with new tasks until ``count`` were acknowledged or its
deadline passes (exit code 1). A producer may be told to stop early: the file
``until`` names appears.

A workload with ``keys`` makes a unique-task producer instead
(:func:`produce_unique`): one enqueue at a time of a unique task of
:mod:`chaos.unique`, its rule and key drawn at random, each outcome journaled
(stored, rejected, raised, rolled back), a share of them inside a transaction
of its own that it rolls back.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from chaos import unique
from chaos.journal import monotonic, of_process
from chaos.probe import MAX_ATTEMPTS, app, poison_task, task
from tenure.errors import TenureError, UniqueConflict

ERROR_PAUSE = 0.2
"""Seconds between a failed enqueue and the next try (the server is restarting)."""


@dataclass(frozen=True, slots=True)
class Workload:
    """What one producer enqueues: ``count`` tasks in batches of ``batch``, at
    ``rate`` tasks a second (0: as fast as the store takes them), each sleeping
    a duration drawn from ``durations``. A share ``flaky`` fails its first
    attempt, a share ``doomed`` every attempt (it ends failed). Each batch gets
    one of ``priorities``."""

    count: int
    batch: int = 10
    rate: float = 0.0
    durations: tuple[float, float] = (0.0, 0.0)
    flaky: float = 0.0
    doomed: float = 0.0
    priorities: tuple[int, ...] = (0,)
    seed: int = 0
    deadline: float = 600.0
    until: str | None = None
    """A file whose existence ends the producer early (after a whole batch)."""
    poison: tuple[str, ...] = ()
    """If given, poison tasks (:mod:`chaos.poison`) instead, of these kinds in turn."""
    keys: int = 0
    """If given, unique tasks (:mod:`chaos.unique`) instead, one at a time, of
    a rule and a key (of ``keys``) drawn at random."""
    rollback: float = 0.0
    """The share of unique tasks enqueued inside a transaction then rolled back."""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Workload:
        values = json.loads(text)
        values["durations"] = tuple(values["durations"])
        values["priorities"] = tuple(values["priorities"])
        values["poison"] = tuple(values.get("poison", ()))
        return cls(**values)


def calls(workload: Workload, rng: random.Random, size: int) -> list[tuple[float, int]]:
    """``size`` probe calls: (duration, attempts that fail)."""
    low, high = workload.durations
    made = []
    for _ in range(size):
        draw = rng.random()
        doomed, flaky = draw < workload.doomed, draw < workload.doomed + workload.flaky
        fails = MAX_ATTEMPTS if doomed else 1 if flaky else 0
        made.append((round(rng.uniform(low, high), 3), fails))
    return made


def produce(url: str, workload: Workload) -> int:
    """Enqueue the workload; 0 once all of it was acknowledged, else 1."""
    app.use(url)
    journal = of_process("producer")
    rng = random.Random(workload.seed)
    began = monotonic()
    pause = threading.Event()
    acknowledged = 0
    while acknowledged < workload.count:
        if workload.until is not None and os.path.exists(workload.until):
            break
        if monotonic() - began > workload.deadline:
            journal.write("gave-up", acknowledged=acknowledged)
            return 1
        if workload.rate:
            pause.wait(max(0.0, began + acknowledged / workload.rate - monotonic()))
        size = min(workload.batch, workload.count - acknowledged)
        priority = rng.choice(workload.priorities)
        try:
            if workload.poison:
                kinds = workload.poison
                made = [(kinds[(acknowledged + i) % len(kinds)],) for i in range(size)]
                ids = [h.id for h in poison_task.options(priority=priority).enqueue_many(made)]
            else:
                handles = task.options(priority=priority).enqueue_many(calls(workload, rng, size))
                ids = [handle.id for handle in handles]
        except TenureError as exc:
            journal.write("enq-error", count=size, error=f"{type(exc).__name__}: {exc}"[:300])
            pause.wait(ERROR_PAUSE)
            continue
        journal.write("enq", ids=ids, priority=priority)
        acknowledged += size
    app.close()
    return 0


def produce_unique(url: str, workload: Workload) -> int:
    """Enqueue ``count`` unique tasks one by one, each of a rule and a key
    drawn at random; journal each as ``enq`` (stored), ``enq-rejected`` (the
    lock was held: no task), ``enq-raised`` (UniqueConflict to the caller),
    ``rolled-back`` (enqueued in a transaction then rolled back) or
    ``enq-error``. 0 once done, 1 past the deadline."""
    unique.app.use(url)
    journal = of_process("producer")
    rng = random.Random(workload.seed)
    began = monotonic()
    for number in range(workload.count):
        if monotonic() - began > workload.deadline:
            journal.write("gave-up", acknowledged=number)
            return 1
        if workload.rate:
            threading.Event().wait(max(0.0, began + number / workload.rate - monotonic()))
        name = rng.choice(sorted(unique.tasks))
        key, duration = rng.randrange(workload.keys), round(rng.uniform(*workload.durations), 3)
        function = unique.tasks[name]
        if rng.random() < workload.rollback:
            task_id = f"{unique.ROLLED_BACK}{workload.seed}-{number}"
            error = rolled_back(url, function.options(id=task_id), key, duration)
            journal.write("rolled-back", id=task_id, name=name, key=key, error=error)
            continue
        try:
            handle = function.enqueue(key, duration)
        except UniqueConflict as exc:
            journal.write("enq-raised", name=name, key=key, holder=exc.holder)
        except TenureError as exc:
            journal.write("enq-error", count=1, error=f"{type(exc).__name__}: {exc}"[:300])
        else:
            if handle.rejected is not None:
                holder = handle.rejected.holder
                journal.write("enq-rejected", name=name, key=key, holder=holder)
            else:
                journal.write("enq", ids=[handle.id], priority=0)
    unique.app.close()
    return 0


def rolled_back(url: str, function: unique.Held, key: int, duration: float) -> str | None:
    """Enqueue in a transaction of our own on the store's database, then roll
    it back; the error the enqueue raised, if it did."""
    error: str | None = None
    with _transaction(url) as connection:
        try:
            function.options(connection=connection).enqueue(key, duration)
        except TenureError as exc:
            error = type(exc).__name__
    return error


@contextmanager
def _transaction(url: str) -> Iterator[Any]:
    """A connection to the store's database inside a transaction that is rolled back."""
    if url.startswith("sqlite:///"):
        connection = sqlite3.connect(url[len("sqlite:///") :], isolation_level=None, timeout=30)
        try:
            connection.execute("BEGIN IMMEDIATE")
            yield connection
            connection.execute("ROLLBACK")
        finally:
            connection.close()
        return
    import psycopg  # noqa: PLC0415 - PostgreSQL only

    with psycopg.connect(url) as session:
        yield session
        session.rollback()


def main(argv: list[str]) -> int:
    url, spec = argv
    workload = Workload.from_json(spec)
    return (produce_unique if workload.keys else produce)(url, workload)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
