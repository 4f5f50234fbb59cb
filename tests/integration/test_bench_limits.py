"""The comparison's second store limit replays tenure's own statement for one
task: each of its transactions must write what ``enqueue()`` writes (the task,
its event, its tallies), on both stores, or the limit would measure other work.
pgbench (PostgreSQL) and a sqlite3 loop run it for a second on a tenure store."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.compare import limits
from tenure import App, Status, Store, Task
from tenure.store import validate

TOPIC, NAME = "probe", "probe.noop"
BATCH = 120
"""Tasks per replayed bulk transaction: enough for the store's COPY path (100)."""


def noop() -> None:
    """Does nothing."""


def but_own(task: Task) -> Task:
    """``task`` without what is its own: its id and its times."""
    return dataclasses.replace(task, id="", created_at=None, updated_at=None)


def check_latencies(took: list[float]) -> None:
    """Many transactions were timed. pgbench now and then logs one at 0 µs on
    this kind of virtual machine (its clock did not move): a latency is never
    negative, and the transactions took time in all."""
    assert len(took) > 3 and all(seconds >= 0 for seconds in took) and sum(took) > 0


def check_probe(store: Store, url: str, written: int) -> None:
    """The probe made ``written`` pending tasks, each with its event and its
    tallies, as an enqueue of the same no-op task makes them."""
    probed = every_task(store)
    assert len(probed) == len({task.id for task in probed}) == written
    assert store.task_stats().total(Status.PENDING) == written
    assert store.task_transition_totals() == {TOPIC: {Status.PENDING: written}}
    app = App(url)
    try:
        enqueued = app.task(name=NAME, topic=TOPIC)(noop).enqueue().refresh()
    finally:
        app.close()
    assert all(but_own(task) == but_own(enqueued) for task in probed)
    for task in (probed[0], probed[-1], enqueued):
        events = store.task_events(task.id)
        assert [(e.from_status, e.to_status, e.topic, e.name) for e in events] == [
            (None, Status.PENDING, TOPIC, NAME)
        ]


def every_task(store: Store) -> list[Task]:
    tasks: list[Task] = []
    cursor = None
    while True:
        page = store.task_list(cursor=cursor, limit=validate.MAX_RESERVE_LIMIT)
        tasks += page.tasks
        if page.cursor is None:
            return tasks
        cursor = page.cursor


def test_the_replayed_postgres_insert_writes_what_an_enqueue_writes(
    postgres_store: Store, postgres_url: str
) -> None:
    took = limits.postgres_task_insert(postgres_url, 1, TOPIC, NAME)
    check_latencies(took)
    check_probe(postgres_store, postgres_url, len(took))


def test_the_postgres_insert_replayed_by_several_clients_logs_each_of_theirs(
    postgres_store: Store, postgres_url: str
) -> None:
    """As many producer processes: each client's transactions are timed (the
    log of every pgbench thread is read) and their ids never collide."""
    took = limits.postgres_task_insert(postgres_url, 1, TOPIC, NAME, clients=3)
    check_latencies(took)
    check_probe(postgres_store, postgres_url, len(took))
    ids = [task.id for task in every_task(postgres_store)]
    assert len({task_id.split("-")[1] for task_id in ids if task_id.startswith("probe-")}) == 3


def test_the_replayed_sqlite_insert_writes_what_an_enqueue_writes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'probe.db'}"
    app = App(url)
    try:
        store = app.store  # migrated: the probe writes into tenure's schema
        took = limits.sqlite_task_insert(tmp_path / "probe.db", 1, TOPIC, NAME)
        check_latencies(took)
        check_probe(store, url, len(took))
    finally:
        app.close()


def test_the_replayed_postgres_bulk_writes_what_an_enqueue_writes(
    postgres_store: Store, postgres_url: str
) -> None:
    took = limits.postgres_task_copy(postgres_url, TOPIC, NAME, BATCH)
    check_bulk_probe(postgres_store, postgres_url, took)


def test_the_replayed_sqlite_bulk_writes_what_an_enqueue_writes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'probe.db'}"
    app = App(url)
    try:
        store = app.store  # migrated: the probe writes into tenure's schema
        took = limits.sqlite_task_batch(tmp_path / "probe.db", TOPIC, NAME, BATCH)
        check_bulk_probe(store, url, took)
    finally:
        app.close()


def check_bulk_probe(store: Store, url: str, took: float) -> None:
    """The probe wrote one task, then a batch in one transaction (one creation
    time shared by all of its tasks), each as an enqueue makes it."""
    assert took > 0
    times = Counter(task.created_at for task in every_task(store))
    assert sorted(times.values()) == [1, BATCH]
    check_probe(store, url, BATCH + 1)


@pytest.mark.parametrize("count", [0, 2])
def test_a_statement_that_does_not_name_its_id_once_is_refused(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """The id is the one value made new per transaction; a statement naming it
    otherwise than once cannot be replayed as tenure sends it."""
    original = limits.POSTGRES_Q["insert_one"]
    changed = original.replace("%(id)s::text", "%(id)s::text || %(id)s::text" if count else "'x'")
    monkeypatch.setitem(limits.POSTGRES_Q, "insert_one", changed)
    with pytest.raises(limits.BenchError, match="exactly once"):
        limits.task_insert_script(postgres_url, limits.noop_task(TOPIC, NAME))
