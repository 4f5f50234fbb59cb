"""The typed enqueue surface at run time: ``.options`` refuses an unknown name
and keeps earlier overrides, ``task.call(...)`` checks its arguments at once, and
``enqueue_many`` takes calls of its own task only, writing nothing otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import tenure
from tenure import App, InvalidInput
from tenure.testing import isolated

app = App("sqlite:///:memory:")


@app.task
def add(a: int, b: int = 0) -> int:
    return a + b


@app.task
def other(x: int) -> int:
    return x


@pytest.fixture
def test_app(store_url: str) -> Iterator[App]:
    with isolated(app, store_url):
        yield app


def test_an_unknown_option_is_refused_by_name() -> None:
    options: dict[str, Any] = {"priorty": 3}
    with pytest.raises(InvalidInput, match="unknown option 'priorty'; expected delay"):
        add.options(**options)


def test_options_chain_and_none_goes_back_to_the_declaration(test_app: App) -> None:
    chained = add.options(priority=7, description="first").options(delay=0.0)
    task = chained.enqueue(1).refresh()
    assert (task.priority, task.description) == (7, "first")
    reset = chained.options(priority=None).enqueue(1).refresh()
    assert reset.priority == 0


def test_a_call_checks_its_arguments_when_made() -> None:
    with pytest.raises(InvalidInput, match="do not fit"):
        add.call(1, 2, 3)  # type: ignore[call-arg]
    call = add.call(1, b=2)
    assert (call.task, call.args, dict(call.kwargs)) == (add.name, (1,), {"b": 2})


def test_enqueue_many_takes_calls_and_refuses_another_tasks_whole(test_app: App) -> None:
    handles = add.enqueue_many([add.call(1, 2), (3,), {"a": 4}])
    assert [h.refresh().data for h in handles] == [
        {"args": [1, 2], "kwargs": {}},
        {"args": [3], "kwargs": {}},
        {"args": [], "kwargs": {"a": 4}},
    ]
    mixed: list[Any] = [add.call(5), other.call(6)]
    with pytest.raises(InvalidInput, match=r"calls\[1\]: a call of .*other, not of .*add"):
        add.enqueue_many(mixed)
    with pytest.raises(InvalidInput, match=r"calls\[0\]: must be task.call"):
        add.enqueue_many([[1, 2]])  # type: ignore[list-item]
    assert test_app.tasks.count() == 3


def test_call_is_exported_for_annotations() -> None:
    assert tenure.Call is type(add.call(1))


def test_the_typed_options_are_the_options() -> None:
    from tenure.function import EnqueueOptions, Overrides

    assert list(Overrides.__annotations__) == list(EnqueueOptions.__dataclass_fields__)
