"""Workflows with real worker processes, on each store: a 200-member group's
callback is released exactly once, with every member's outcome, while
workers are SIGKILLed mid-group and two schedulers recover their tasks; a
chain runs its links on whichever workers are alive."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

import tenure
from tenure import App, ChainStopped, Status, Store
from tests.apps import flows
from tests.integration.workers import WorkerProcess, wait_for

pytestmark = pytest.mark.slow

LEASE = "2"
MEMBERS = 200


@pytest.fixture
def app(store_url: str) -> App:
    with flows.app.using(store_url):
        yield flows.app  # type: ignore[misc]


def launch(url: str, processes: list[WorkerProcess], log: Path, command: str) -> WorkerProcess:
    options = ["--no-scheduler", "--lease", LEASE, "--concurrency", "4"]
    if command == "scheduler":
        options = ["--interval", "0.2"]
    process = WorkerProcess(
        url,
        *options,
        app="tests.apps.flows:app",
        command=command,
        env={"TENURE_FLOW_LOG": str(log)},
        ready="started" if command == "worker" else "standing by",
    )
    processes.append(process)
    return process


def ended(store: Store, ids: list[str]) -> int:
    return sum(1 for task_id in ids if store.task_get(task_id).finished)  # type: ignore[union-attr]


def test_a_group_callback_is_released_once_while_workers_die(
    app: App, store: Store, store_url: str, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    log = tmp_path / "callback.log"
    for _ in range(2):
        launch(store_url, workers, log, "scheduler")
    victims = [launch(store_url, workers, log, "worker") for _ in range(2)]
    handle = app.group([flows.square.s(n) for n in range(MEMBERS)], on_complete=flows.collect.s())
    ids = [member.id for member in handle.members]
    for victim, reached in zip(victims, (40, 110), strict=True):
        wait_for(lambda at=reached: ended(store, ids) >= at, f"{reached} members ended")
        victim.signal(signal.SIGKILL)  # mid-group, with tasks in its hands
        victim.wait_exit()
        launch(store_url, workers, log, "worker")
    assert handle.callback is not None
    counts = handle.callback.wait(timeout=60)
    expected_sum = sum(n * n for n in range(MEMBERS) if n % 10)
    assert counts == {"done": 180, "failed": 20, "sum": expected_sum}
    releases = [
        e for e in store.event_list(limit=10_000)
        if e.task_id == handle.callback.id and e.to_status is Status.PENDING
    ]  # fmt: skip
    assert len(releases) == 1
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert [run["task"] for run in runs] == [handle.callback.id]
    gate = store.gate_get(handle.callback.refresh().gate_in or "")
    assert gate is not None and gate.remaining == 0 and gate.opened_at is not None


def test_a_chain_runs_across_workers(
    app: App, store_url: str, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    log = tmp_path / "callback.log"
    launch(store_url, workers, log, "worker")
    launch(store_url, workers, log, "worker")
    chain = flows.step.s(0, 1).then(flows.step.s(2))
    for add in range(3, 6):
        chain = chain.then(flows.step.s(add))
    handle = chain.enqueue()
    assert handle.wait(timeout=30) == 1 + 2 + 3 + 4 + 5


def test_a_chain_stops_at_a_failure_across_workers(
    app: App, store_url: str, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    log = tmp_path / "callback.log"
    launch(store_url, workers, log, "worker")
    launch(store_url, workers, log, "worker")
    chain = flows.step.s(0, 1).then(flows.step.s(2)).then(flows.step.s(-1))
    handle = chain.then(flows.step.s(4)).then(flows.step.s(5)).enqueue()
    with pytest.raises(ChainStopped, match="cannot add -1") as stopped:
        handle.wait(timeout=30)
    links = [task.refresh() for task in handle.tasks]
    assert stopped.value.task.id == links[2].id
    assert [t.status for t in links] == [Status.DONE] * 2 + [Status.FAILED] + [Status.CANCELLED] * 2
    assert [t.result for t in links[:2]] == [1, 3]
    assert all(t.attempts == 0 for t in links[3:])  # never ran


def test_a_group_inside_a_chain_fans_out_and_in_across_workers(
    app: App, store_url: str, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    log = tmp_path / "callback.log"
    launch(store_url, workers, log, "worker")
    launch(store_url, workers, log, "worker")
    fan = tenure.group([flows.step.s(add) for add in (10, 20, 30)])
    handle = flows.step.s(0, 1).then(fan).then(flows.total.s()).enqueue()
    assert handle.wait(timeout=30) == 11 + 21 + 31
