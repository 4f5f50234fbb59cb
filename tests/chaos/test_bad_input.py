"""Bad input, on both stores: hypothesis throws arbitrary cursors, ids, topics,
payloads, limits, priorities and delays at the public operations, and each call
either does what it says or raises a tenure error, and a refused one changes
nothing (the whole store compared before and after). Topics filter literally,
``%`` and ``_`` included. A task whose name no worker knows is never run: a
real worker fails it with a clear error and goes on draining. And the
bad-input chaos scenario's quick profile: the same, while producers enqueue
and workers drain.

Examples are bounded (``max_examples``), so each store's share stays well
under a minute; the 10 and 100 MB payloads come once, in the scenario.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from chaos.scenarios import run
from chaos.scenarios.bad_input import LITERAL_TOPICS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tenure import Status, Store, Task, TenureError
from tenure.errors import InvalidInput
from tenure.store import NewTask, Page, TaskFilter, open_store
from tests.chaos.test_scenarios import assert_clean, planned
from tests.integration.workers import WorkerProcess, wait_for

BOUNDED = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
Snapshot = tuple[int, list[tuple[str, Status, int]], int]
SEEDED = (*LITERAL_TOPICS, "a", "ab", "A", "b_c", "b%c")
"""The topics of the tasks the filter tests look for."""
ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
ADD = "tests.apps.basic.add"


def snapshot(store: Store) -> Snapshot:
    """Everything a refused call could have changed: tasks and the event log."""
    tasks = store.task_list(limit=1000).tasks
    versions = sorted((t.id, t.status, t.record_ver) for t in tasks)
    return store.task_count(), versions, len(store.event_list(limit=10_000))


def refused_or_done(store: Store, call: Callable[[], object], *, read: bool = False) -> object:
    """Make the call; a refusal must be a tenure error and change nothing (nor
    may a ``read`` that was answered)."""
    before = snapshot(store)
    try:
        done = call()
    except TenureError:
        assert snapshot(store) == before, "a refused call changed the store"
        return None
    if read:
        assert snapshot(store) == before, "a read changed the store"
    return done


def read(store: Store, call: Callable[[], object]) -> object:
    return refused_or_done(store, call, read=True)


@pytest.fixture
def seeded(store: Store) -> dict[str, str]:
    """One task in each of :data:`SEEDED` (topic → id)."""
    made = {}
    for topic in SEEDED:
        made[topic] = store.task_create(NewTask(topic, "n", description=f"[{topic}]")).id
    return made


# -- reads never fail but with a tenure error, and never write ---------------------

TEXTS = st.text(max_size=40) | st.sampled_from(["%", "_", "%%", "_%", "\x00", "1.2", "0.0"])


@BOUNDED
@given(cursor=TEXTS | st.text(alphabet="0123456789.-", max_size=30))
def test_any_cursor_is_read_or_refused(store: Store, seeded: dict[str, str], cursor: str) -> None:
    read(store, lambda: store.task_list(cursor=cursor))
    read(store, lambda: store.task_list_leased(cursor=cursor))
    read(store, lambda: store.event_list(after=cursor))


@BOUNDED
@given(topic=TEXTS | st.sampled_from(SEEDED))
def test_topic_filters_match_literally(store: Store, seeded: dict[str, str], topic: str) -> None:
    wanted = [seeded[topic]] if topic in seeded else []
    page = read(store, lambda: store.task_list(TaskFilter(topic=topic)))
    if page is None:  # refused: only a topic no task can have
        with pytest.raises(InvalidInput):
            store.task_create(NewTask(topic, "n"))
        return
    assert isinstance(page, Page) and [t.id for t in page.tasks] == wanted
    assert store.task_count(TaskFilter(topic=topic)) == len(wanted)
    # The description filter: literal too, ASCII letters in any case.
    needle = f"[{topic}]".translate(ASCII_LOWER)
    alike = [i for s, i in seeded.items() if needle in f"[{s}]".translate(ASCII_LOWER)]
    assert [t.id for t in store.task_list(TaskFilter(text=f"[{topic}]")).tasks] == alike


@BOUNDED
@given(task_id=TEXTS | st.integers() | st.none() | st.binary(max_size=5))
def test_any_id_is_found_missing_or_refused(
    store: Store, seeded: dict[str, str], task_id: Any
) -> None:
    assert read(store, lambda: store.task_get(task_id)) is None
    for operation in (store.task_cancel, store.task_retry):
        before = snapshot(store)
        with pytest.raises(TenureError):  # no task has a made-up id
            operation(task_id)
        assert snapshot(store) == before


NUMBERS = (
    st.integers()
    | st.floats()
    | st.booleans()
    | st.text(max_size=5)
    | st.none()
    | st.sampled_from([0, -1, 2**31, 2**63, -(2**63) - 1, math.nan, math.inf])
)


@BOUNDED
@given(limit=NUMBERS, scan=NUMBERS)
def test_any_limit_and_scan_is_used_or_refused(
    store: Store, seeded: dict[str, str], limit: Any, scan: Any
) -> None:
    read(store, lambda: store.task_list(limit=limit))
    read(store, lambda: store.task_list(scan=scan))
    read(store, lambda: store.event_list(limit=limit))
    read(store, lambda: store.task_list_leased(limit=limit))


# -- writes: stored exactly as given, or refused with nothing written ----------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
NOT_JSON = st.sampled_from([object(), {1, 2}, b"bytes", datetime(2020, 1, 1), 1j, "\ud800"])


@BOUNDED
@given(data=JSON | NOT_JSON | st.lists(NOT_JSON, min_size=1, max_size=2))
def test_any_payload_is_kept_exactly_or_refused(store: Store, data: Any) -> None:
    made = refused_or_done(store, lambda: store.task_create(NewTask("t", "n", data=data)))
    if made is None:
        return
    assert isinstance(made, Task)
    stored = store.task_get(made.id)
    assert stored is not None
    assert stored.data == data


@BOUNDED
@given(priority=NUMBERS, delay=NUMBERS, max_attempts=NUMBERS, tag=TEXTS)
def test_any_priority_delay_and_attempts_are_kept_or_refused(
    store: Store, priority: Any, delay: Any, max_attempts: Any, tag: str
) -> None:
    def create() -> Any:
        return store.task_create(
            NewTask(
                "t",
                "n",
                priority=priority,
                delay=delay,
                max_attempts=max_attempts,
                tags=frozenset({tag}),
            )
        )

    made = refused_or_done(store, create)
    if made is not None:
        assert made.priority == priority and made.max_attempts == max_attempts


# -- a task no worker knows, and the scenario ----------------------------------------


def test_an_unknown_task_name_fails_clearly_and_the_worker_drains_on(store_url: str) -> None:
    with open_store(store_url) as store:
        # No grace: a name no worker will ever know fails at once (see test_rolling_deploy).
        worker = WorkerProcess(store_url, "--unknown-name-grace", "0")
        try:
            unknown = store.task_create(NewTask("basic", "tests.apps.basic.no_such_task"))
            healthy = [
                store.task_create(NewTask("basic", ADD, data={"args": [i, 1], "kwargs": {}}))
                for i in range(20)
            ]
            ids = [unknown.id, *(t.id for t in healthy)]
            wait_for(
                lambda: all((t := store.task_get(i)) is not None and t.finished for i in ids),
                "every task finished",
            )
            assert worker.process.poll() is None, "the worker died"
            failed = store.task_get(unknown.id)
            assert failed is not None and failed.status is Status.FAILED
            assert failed.attempts == 1  # final: never tried again
            assert failed.error is not None and failed.error.type == "UnknownTask"
            assert "no_such_task" in failed.error.message
            done = [store.task_get(t.id) for t in healthy]
            assert [t.result for t in done if t is not None] == [i + 1 for i in range(20)]
        finally:
            worker.stop()


def test_bad_input_scenario(backend: str, store_url: str, tmp_path: Any) -> None:
    outcome = run("bad-input", backend, "quick", tmp_path, url=store_url)

    assert_clean(outcome)
    figures = outcome.verdict.figures
    assert figures.tasks == planned("bad-input")
    # Nothing of the bad calls was written: only the literal topics' tasks beside.
    assert figures.stored == figures.tasks + len(LITERAL_TOPICS)
    line = outcome.line()
    assert " problems 0 " in line and " bad-calls 0 " not in line, line
