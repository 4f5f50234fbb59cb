"""Workflows through the App, run as a worker runs them (tenure.testing), on
both stores: a group's callback gets every outcome, a chain passes results on
and stops at a failure, a group inside a chain fans out and in, and a call
that could never run is refused before anything is stored."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import tenure
from tenure import App, ChainStopped, Ended, InvalidInput, Status
from tenure.testing import MEMORY_URL, run_until_empty

app = App(MEMORY_URL)
received: list[Any] = []


@app.task
def add(a: int, b: int) -> int:
    return a + b


@app.task
def mul(value: int, by: int) -> int:
    return value * by


@app.task
def total(values: list[int]) -> int:
    return sum(values)


@app.task
def boom(value: Any = None) -> None:
    raise ValueError(f"no good: {value}")


@app.task
def summarize(outcomes: list[Ended], label: str) -> str:
    received.append(outcomes)
    done = sum(1 for outcome in outcomes if outcome.ok)
    return f"{label}: {done} of {len(outcomes)} done"


@app.task
async def async_mul(value: int, by: int) -> int:
    return value * by


@pytest.fixture
def flows(store_url: str) -> Iterator[App]:
    received.clear()
    with app.using(store_url):
        yield app


def test_a_group_callback_gets_every_members_outcome(flows: App) -> None:
    handle = flows.group([add.s(1, 2), boom.s(7), add.s(3, 4)], on_complete=summarize.s("sums"))
    assert handle.callback is not None and handle.callback.status is Status.WAITING
    run_until_empty(flows)
    assert handle.callback.wait(timeout=5) == "sums: 2 of 3 done"
    [outcomes] = received
    assert [(o.id, o.status, o.result) for o in outcomes] == [
        (handle.members[0].id, Status.DONE, 3),
        (handle.members[1].id, Status.FAILED, None),
        (handle.members[2].id, Status.DONE, 7),
    ]
    assert outcomes[1].error is not None and outcomes[1].error.type == "ValueError"
    ended = handle.wait(timeout=5)
    assert [o.status for o in ended] == [Status.DONE, Status.FAILED, Status.DONE]
    listed = flows.tasks.group(handle.group_id)
    assert [t.id for t in listed][-1] == handle.callback.id


def test_a_chain_passes_each_result_on(flows: App) -> None:
    chain = add.s(1, 2).then(mul.s(10)).then(async_mul.s(2)).then(mul.s(-1))
    handle = chain.enqueue()
    assert [h.status for h in handle.tasks] == [Status.PENDING] + [Status.WAITING] * 3
    run_until_empty(flows)
    assert handle.wait(timeout=5) == -60


def test_a_chain_stops_at_a_failure_and_says_where(flows: App) -> None:
    handle = add.s(1, 2).then(boom.s()).then(mul.s(3)).then(mul.s(4)).enqueue()
    run_until_empty(flows)
    with pytest.raises(ChainStopped) as stopped:
        handle.wait(timeout=5)
    assert stopped.value.task.id == handle.tasks[1].id
    assert "no good: 3" in str(stopped.value)
    statuses = [h.refresh().status for h in handle.tasks]
    assert statuses == [Status.DONE, Status.FAILED, Status.CANCELLED, Status.CANCELLED]
    assert handle.stopped() is not None and handle.stopped().id == handle.tasks[1].id  # type: ignore[union-attr]


def test_a_group_inside_a_chain_fans_out_and_in(flows: App) -> None:
    fan = tenure.group([mul.s(2), mul.s(3), mul.s(4)])
    handle = add.s(1, 1).then(fan).then(total.s()).enqueue()
    run_until_empty(flows)
    assert handle.wait(timeout=5) == 2 * 2 + 2 * 3 + 2 * 4


def test_a_group_of_one_in_a_chain_still_gives_a_list(flows: App) -> None:
    handle = add.s(1, 1).then(tenure.group([mul.s(5)])).then(total.s()).enqueue()
    ends_in_one = add.s(2, 2).then(tenure.group([mul.s(3)])).enqueue()
    run_until_empty(flows)
    assert handle.wait(timeout=5) == 10  # total([10]): a list, though of one
    assert ends_in_one.wait(timeout=5) == [12]


def test_a_chain_may_end_with_a_group_and_its_callback(flows: App) -> None:
    fan = tenure.group([mul.s(2), boom.s()], on_complete=summarize.s("fan"))
    handle = add.s(2, 3).then(fan).enqueue()
    run_until_empty(flows)
    assert handle.wait(timeout=5) == "fan: 1 of 2 done"


def test_arguments_that_could_never_fit_are_refused_before_anything_is_stored(
    flows: App,
) -> None:
    with pytest.raises(InvalidInput) as refused:
        add.s(1, 2).then(mul.s(10, 20)).enqueue()  # mul gets the result first: one too many
    assert refused.value.field == "tasks[1]"
    with pytest.raises(InvalidInput):
        flows.group([add.s(1)], on_complete=summarize.s("x"))
    assert flows.store.task_count() == 0


def test_a_workflow_of_two_apps_is_refused(flows: App) -> None:
    other = App(MEMORY_URL)

    @other.task
    def elsewhere(value: int) -> int:
        return value

    with pytest.raises(InvalidInput, match="same App"):
        add.s(1, 2).then(elsewhere.s()).enqueue()
