"""tenure.testing: run_until_empty runs tasks as a worker would, in the test's
thread (JSON in and out, retries, snoozes, hooks, middleware, fencing), on both
stores; eager mode runs each enqueue before it returns; isolated gives an App a
private store and puts it back."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import timedelta
from typing import Any

import pytest

import tenure
from tenure import App, Middleware, Outcome, Status
from tenure.task import Task
from tenure.testing import MEMORY_URL, TasksRemain, eager, isolated, run_until_empty

app = App(MEMORY_URL)
seen: list[tuple[str, Any]] = []
told: list[str] = []


@app.task
def add(a: int, b: int) -> int:
    seen.append(("add", threading.get_ident()))
    return a + b


@app.task
def echo(value: Any) -> Any:
    return value


@app.task
def unencodable() -> object:
    return {1, 2}


@app.task(retries=2)
def flaky() -> None:
    raise ValueError("always")


@app.task
def nap() -> None:
    raise tenure.Snooze(3600)


@app.task
def fan_out(count: int) -> int:
    add.enqueue_many([add.call(i, i) for i in range(count)])
    return count


@app.task
async def later(value: int) -> int:
    return value * 10


order: list[str] = []


@app.task
def reminder() -> None:
    order.append("reminder in a day")


@app.task
def receipt() -> None:
    order.append("receipt in 10 s")


@app.task
def checkout() -> None:
    order.append("checkout")
    reminder.options(delay=86400).enqueue()
    receipt.options(delay=10).enqueue()


@app.task
async def async_parent() -> None:
    order.append("parent starts")
    handle = await add.aenqueue(2, 2)
    order.append(f"parent sees its child {handle.status}")


@app.task
def interrupted() -> None:
    raise KeyboardInterrupt


@app.task(retries=1)
def soon_again() -> int:
    attempt = tenure.current().task.attempts
    if attempt == 1:
        raise tenure.Retry(in_=0.002)  # due again within the drain's next steps
    return attempt


@app.on("succeeded")
def remember(outcome: Outcome) -> None:
    told.append(f"succeeded {outcome.task.name.rsplit('.', 1)[-1]}")


@app.on("retrying")
def remember_retry(outcome: Outcome) -> None:
    told.append(f"retrying after {outcome.delay:.1f}")


class Tagging(Middleware):
    def enqueue(self, name: str, headers: dict[str, str]) -> None:
        headers["request"] = "r-1"

    def execute(self, task: Task) -> AbstractContextManager[object]:
        return self._note(task)

    @contextmanager
    def _note(self, task: Task) -> Iterator[None]:
        told.append(f"inside {tenure.current().headers.get('request')}")
        yield


@pytest.fixture
def test_app(store_url: str) -> Iterator[App]:
    seen.clear()
    told.clear()
    order.clear()
    with isolated(app, store_url):
        yield app


def test_tasks_run_in_the_calling_thread_with_json_in_and_out(test_app: App) -> None:
    handle = add.enqueue(2, 3)
    tupled = echo.enqueue((1, "two"))
    drained = run_until_empty(test_app)
    assert (drained.done, drained.failed, len(drained)) == (2, 0, 2)
    assert handle.wait(timeout=0) == 5
    assert tupled.wait(timeout=0) == [1, "two"]  # what the worker's JSON makes of it
    assert seen == [("add", threading.get_ident())]
    assert told == ["succeeded add", "succeeded echo"]
    assert run_until_empty(test_app).executed == []


def test_a_result_json_cannot_hold_fails_the_task(test_app: App) -> None:
    handle = unencodable.enqueue()
    assert run_until_empty(test_app).failed == 1
    task = handle.refresh()
    assert task.status is Status.FAILED and task.error is not None
    assert "JSON" in task.error.message


def test_retries_run_after_their_backoff_on_the_moved_clock(test_app: App) -> None:
    handle = flaky.enqueue()
    drained = run_until_empty(test_app)
    assert (drained.retried, drained.failed, len(drained)) == (2, 1, 3)
    task = handle.refresh()
    assert (task.status, task.attempts, task.priority) == (Status.FAILED, 3, -2)
    assert task.started_at is not None and task.finished_at is not None
    assert task.created_at is not None and task.created_at <= task.started_at <= task.finished_at
    assert [line.split()[0] for line in told] == ["retrying", "retrying"]


def test_scheduled_false_leaves_later_tasks_queued(test_app: App) -> None:
    soon = add.enqueue(1, 1)
    delayed = add.options(delay=3600).enqueue(2, 2)
    assert run_until_empty(test_app, scheduled=False).done == 1
    assert soon.refresh().status is Status.DONE
    assert delayed.refresh().status is Status.PENDING
    assert run_until_empty(test_app).done == 1
    assert delayed.wait(timeout=0) == 4


def test_snoozes_wake_on_the_moved_clock_and_a_task_that_never_ends_stops_at_the_limit(
    test_app: App,
) -> None:
    handle = nap.enqueue()
    with pytest.raises(TasksRemain, match="after 3 executions"):
        run_until_empty(test_app, limit=3)
    task = handle.refresh()
    assert task.status is Status.PENDING and task.attempts == 0  # a snooze spends none
    assert task.created_at is not None and task.updated_at is not None
    assert task.updated_at - task.created_at >= timedelta(hours=3)


def test_tasks_enqueued_by_tasks_and_async_tasks_run_in_the_same_call(test_app: App) -> None:
    fan_out.enqueue(3)
    ten = later.enqueue(1)
    drained = run_until_empty(test_app)
    assert drained.done == 5
    assert ten.wait(timeout=0) == 10
    assert [t.name.rsplit(".", 1)[-1] for t in drained.executed].count("add") == 3


def test_middleware_headers_travel_and_execution_is_wrapped(test_app: App) -> None:
    test_app.add_middleware(Tagging())
    try:
        add.enqueue(1, 2)
        run_until_empty(test_app)
    finally:
        test_app.middleware.clear()
    assert told == ["inside r-1", "succeeded add"]


def test_only_the_apps_topics_run_unless_named(test_app: App) -> None:
    other = add.options(topic="elsewhere").enqueue(1, 1)
    assert run_until_empty(test_app).executed == []
    assert run_until_empty(test_app, topics=["elsewhere"]).done == 1
    assert other.wait(timeout=0) == 2


def test_eager_runs_each_enqueue_before_it_returns(test_app: App) -> None:
    with eager(test_app):
        handle = fan_out.enqueue(2)
        assert handle.status is Status.DONE
        assert handle.result() == 2
        assert test_app.tasks.count(status="done") == 3
        assert add.enqueue(4, 4).result() == 8
    assert add.enqueue(1, 1).status is Status.PENDING


def test_eager_leaves_a_task_written_on_the_callers_connection(tmp_path: Any) -> None:
    import sqlite3

    url = f"sqlite:///{tmp_path / 'own.db'}"
    with isolated(app, url), eager(app):
        assert app.store  # opened (its schema made) before the caller's transaction
        connection = sqlite3.connect(tmp_path / "own.db", isolation_level=None)
        connection.execute("BEGIN IMMEDIATE")
        handle = add.options(connection=connection).enqueue(1, 2)
        connection.execute("COMMIT")
        connection.close()
        assert handle.status is Status.PENDING
        assert run_until_empty(app).done == 1


def test_isolated_puts_the_app_back_as_it_was(tmp_path: Any) -> None:
    own = App(f"sqlite:///{tmp_path / 'own.db'}")
    kept = own.store
    with isolated(own) as inside:
        assert inside is own and own.url == MEMORY_URL
        assert own.store is not kept
        private = own.store
    assert own.store is kept and own.url.endswith("own.db")
    with pytest.raises(tenure.StoreError):
        private.task_get("x")
    own.close()


def test_tasks_enqueued_by_a_task_are_timed_on_the_moved_clock(test_app: App) -> None:
    checkout.options(delay=2 * 86400).enqueue()  # the clock moves two days to run it
    run_until_empty(test_app)
    assert order == ["checkout", "receipt in 10 s", "reminder in a day"]
    parent = test_app.tasks.list(name=checkout.name)[0]
    child = test_app.tasks.list(name=receipt.name)[0]
    assert parent.started_at is not None and child.created_at is not None
    assert parent.started_at <= child.created_at


def test_in_eager_mode_a_child_enqueued_from_async_code_runs_after_its_parent(
    test_app: App,
) -> None:
    with eager(test_app):
        async_parent.enqueue()
    assert order == ["parent starts", "parent sees its child pending"]
    assert test_app.tasks.count(status="done") == 2


def test_ctrl_c_in_a_task_stops_the_drain_and_hands_the_task_back(test_app: App) -> None:
    handle = interrupted.enqueue()
    add.enqueue(1, 1)
    with pytest.raises(KeyboardInterrupt):
        run_until_empty(test_app)
    task = handle.refresh()
    assert task.status is Status.PENDING and task.lease_owner is None
    assert seen == []  # the drain stopped there


def test_a_store_that_fails_mid_write_gets_the_task_back(test_app: App) -> None:
    handle = add.enqueue(1, 2)
    store = test_app.store
    original = store.task_complete_many

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise tenure.StoreUnavailable("the server went away")

    store.task_complete_many = failing  # type: ignore[method-assign]
    try:
        with pytest.raises(tenure.StoreUnavailable):
            run_until_empty(test_app)
    finally:
        store.task_complete_many = original  # type: ignore[method-assign]
    assert handle.refresh().status is Status.PENDING
    assert run_until_empty(test_app).done == 1


def test_tasks_that_come_due_during_the_drain_still_run(test_app: App) -> None:
    for _ in range(30):
        handle = soon_again.enqueue()
        drained = run_until_empty(test_app)
        assert (len(drained), handle.wait(timeout=0)) == (2, 2)


def test_topics_must_be_a_list() -> None:
    with pytest.raises(tenure.InvalidInput, match="topics"):
        run_until_empty(app, topics="default")
