"""The Python API: declaring tasks, enqueueing them, handles and app.tasks."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import tenure
from tenure import ConfigError, InvalidInput, Lease, Status
from tenure.errors import TaskCancelled, TaskFailed
from tenure.store import ReserveParams
from tenure.task import TaskError


@pytest.fixture
def app(tmp_path: Path) -> tenure.App:
    app = tenure.App(f"sqlite:///{tmp_path / 'api.db'}")
    yield app  # type: ignore[misc]
    app.close()


def declare(app: tenure.App) -> tenure.function.TaskFunction:  # type: ignore[type-arg]
    @app.task(topic="products-sync", retries=3, timeout=10, priority=1, tags={"gpu"})
    def sync_products(operation: str, include: str = "all", batch_size: int = 100) -> dict:  # type: ignore[type-arg]
        return {"synced": batch_size}

    return sync_products


def test_enqueue_stores_only_the_arguments_given(app: tenure.App) -> None:
    sync = declare(app)
    handle = sync.enqueue("sync-products", batch_size=5)
    task = handle.refresh()
    assert task.status is Status.PENDING
    assert task.data == {"args": ["sync-products"], "kwargs": {"batch_size": 5}}
    assert (task.topic, task.priority, task.max_attempts, task.timeout) == (
        "products-sync",
        1,
        4,
        10,
    )
    assert task.tags == {"gpu"}
    assert task.name.endswith("sync_products")
    assert sync("x", batch_size=7) == {"synced": 7}  # still callable in-process


def test_options_override_per_enqueue(app: tenure.App) -> None:
    sync = declare(app)
    handle = sync.options(
        delay=30, priority=5, group_id="5a978", sub_topic="eu", description="daily sync"
    ).enqueue("sync-products")
    task = handle.refresh()
    assert (task.priority, task.group_id, task.sub_topic) == (5, "5a978", "eu")
    assert task.run_at is not None and task.created_at is not None
    assert (task.run_at - task.created_at).total_seconds() == pytest.approx(30, abs=0.1)
    assert [t.id for t in app.tasks.group("5a978")] == [handle.id]
    with pytest.raises(InvalidInput, match="unknown option"):
        sync.options(colour="red")


def test_enqueue_many_in_one_call(app: tenure.App) -> None:
    sync = declare(app)
    handles = sync.enqueue_many([("a",), ("b",), {"operation": "c"}])
    data = [h.refresh().data for h in handles]
    assert data == [
        {"args": ["a"], "kwargs": {}},
        {"args": ["b"], "kwargs": {}},
        {"args": [], "kwargs": {"operation": "c"}},
    ]
    with pytest.raises(InvalidInput) as raised:
        sync.enqueue_many([("a",), ("a", "b", 1, "extra")])
    assert raised.value.field == "calls[1]"
    assert len(app.tasks.list()) == 3  # nothing of the refused batch was written


def test_aenqueue(app: tenure.App) -> None:
    sync = declare(app)
    handle = asyncio.run(sync.aenqueue("async"))
    assert handle.refresh().data == {"args": ["async"], "kwargs": {}}


def test_bad_calls_are_refused_at_enqueue_time(app: tenure.App) -> None:
    sync = declare(app)
    with pytest.raises(InvalidInput, match="do not fit"):
        sync.enqueue()  # type: ignore[call-arg]
    with pytest.raises(InvalidInput) as raised:
        sync.enqueue({1, 2})  # type: ignore[arg-type]
    assert raised.value.field == "args[0]"
    assert "set is not JSON; pass a list" in str(raised.value)
    with pytest.raises(InvalidInput, match="no task named"):
        app.enqueue("not.registered")
    assert app.tasks.list() == []


def test_enqueue_by_registered_name(app: tenure.App) -> None:
    sync = declare(app)
    handle = app.enqueue(sync.name, "by-name")
    assert handle.refresh().name == sync.name


def test_declaring_twice_or_badly_is_a_clear_error(app: tenure.App) -> None:
    declare(app)
    with pytest.raises(ConfigError, match="registered already"):
        declare(app)
    with pytest.raises(InvalidInput):
        app.task(name="neg", retries=-1)(lambda: None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'topik'"):
        app.task(topik="x")(lambda: None)  # type: ignore[call-overload]


def test_retry_on_takes_one_class_or_a_tuple_and_refuses_anything_else(
    app: tenure.App,
) -> None:
    one = app.task(name="one", retry_on=ConnectionError)(lambda: None)
    assert one.config.retry_on == (ConnectionError,)
    assert one.config.retries_on(ConnectionResetError)  # a subclass
    assert not one.config.retries_on(ValueError)
    assert tenure.declaration.TaskConfig(name="any").retries_on(ValueError)  # None: every one
    for bad in ([ConnectionError], (ConnectionError, "ValueError"), (int,)):
        with pytest.raises(InvalidInput, match="retry_on"):
            app.task(name="bad", retry_on=bad)(lambda: None)  # type: ignore[call-overload]


def test_the_declarations_keywords_are_the_task_configs_fields(app: tenure.App) -> None:
    """One declaration of what @app.task takes: a field added to TaskConfig is
    a keyword of app.task, and the defaults are TaskConfig's own."""
    fields = set(tenure.declaration.TaskConfig.__dataclass_fields__)
    assert set(tenure.declaration.Declaration.__annotations__) == fields
    assert declare(app).config.tags == frozenset({"gpu"})

    @app.task
    def bare() -> None: ...

    where = f"{__name__}.test_the_declarations_keywords_are_the_task_configs_fields.<locals>"
    assert bare.config == tenure.declaration.TaskConfig(name=f"{where}.bare")


def _finish_from_another_thread(app: tenure.App, outcome: str) -> threading.Thread:
    def work() -> None:
        params = ReserveParams(owner="w", lease_seconds=30, tags=frozenset({"gpu"}))
        while not (held := app.store.task_reserve(params)):
            pass
        lease = Lease(held[0].id, "w", held[0].lease_token or 0)
        if outcome == "done":
            app.store.task_complete(lease, {"synced": 42})
        elif outcome == "failed":
            app.store.task_fail(lease, TaskError("ValueError", "bad"))
        else:
            app.store.task_cancel(lease.task_id)

    thread = threading.Thread(target=work)
    thread.start()
    return thread


def test_wait_returns_the_result(app: tenure.App) -> None:
    handle = declare(app).enqueue("x")
    thread = _finish_from_another_thread(app, "done")
    assert handle.wait(timeout=10) == {"synced": 42}
    thread.join()


def test_wait_raises_when_the_task_fails_or_is_cancelled(app: tenure.App) -> None:
    sync = declare(app)
    failing = sync.enqueue("x")
    thread = _finish_from_another_thread(app, "failed")
    with pytest.raises(TaskFailed, match="ValueError: bad"):
        failing.wait(timeout=10)
    thread.join()
    cancelled = sync.enqueue("y")
    thread = _finish_from_another_thread(app, "cancelled")
    with pytest.raises(TaskCancelled):
        cancelled.wait(timeout=10)
    thread.join()


def test_wait_times_out(app: tenure.App) -> None:
    handle = declare(app).enqueue("never-run")
    with pytest.raises(TimeoutError):
        handle.wait(timeout=0.05)


def test_app_tasks_admin(app: tenure.App) -> None:
    sync = declare(app)
    first, second = sync.enqueue("a"), sync.enqueue("b")
    assert app.tasks.get(first.id).id == first.id
    with pytest.raises(tenure.TaskNotFound):
        app.tasks.get("missing")
    app.tasks.cancel(second.id)
    assert [t.id for t in app.tasks.list(status="cancelled")] == [second.id]
    assert [t.id for t in app.tasks.list(status=Status.PENDING, topic="products-sync")] == [
        first.id
    ]
    app.tasks.retry(second.id)
    assert {t.id for t in app.tasks.iter()} == {first.id, second.id}


def test_progress_reaches_the_handle_and_bad_values_are_refused(app: tenure.App) -> None:
    from tenure.testing import run_until_empty

    @app.task(name="reports")
    def reports(fraction: float) -> None:
        tenure.current().progress(fraction, "step 2 of 5")

    good, bad = reports.enqueue(0.4), reports.enqueue(1.5)
    run_until_empty(app)
    task = good.refresh()
    assert (task.status, task.progress, task.progress_note) == (Status.DONE, 0.4, "step 2 of 5")
    refused = bad.refresh()
    assert refused.status is Status.FAILED and refused.error is not None
    assert refused.error.type == "InvalidInput" and refused.progress is None


def test_durations_read_as_people_read_them() -> None:
    from tenure.clock import spoken

    cases = [(0.0004, "0.4 ms"), (0.018, "18 ms"), (2.44, "2.4 s"), (42.2, "42 s"),
             (210, "3.5 min"), (7560, "2.1 h"), (4 * 86400, "4.0 d"), (-1, "0.0 ms")]  # fmt: skip
    assert [spoken(seconds) for seconds, _ in cases] == [text for _, text in cases]
