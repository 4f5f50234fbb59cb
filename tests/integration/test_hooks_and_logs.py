"""A real worker's hooks, middleware and JSON log lines: every ending is told in
its own words, at its level, with the exception's traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tenure import Status, Store
from tests.apps import hooked
from tests.integration.workers import WorkerProcess, enqueue, finished, wait_for, wait_until

pytestmark = pytest.mark.slow


def read(journal: Path) -> list[dict[str, Any]]:
    if not journal.exists():
        return []
    return [json.loads(line) for line in journal.read_text().splitlines()]


@pytest.fixture(params=["threads", "processes"])
def run(
    request: pytest.FixtureRequest, store_url: str, tmp_path: Path
) -> Iterator[tuple[WorkerProcess, Path]]:
    journal = tmp_path / "journal.jsonl"
    worker = WorkerProcess(
        store_url,
        "--pool",
        request.param,
        "--lease",
        "3",
        "--log-format",
        "json",
        app="tests.apps.hooked:app",
        env={"TENURE_TEST_JOURNAL": str(journal)},
    )
    yield worker, journal
    worker.stop()


def test_hooks_middleware_and_json_logs(  # type: ignore[no-untyped-def]
    store: Store, run, tmp_path: Path
) -> None:
    worker, journal = run
    ok = enqueue(store, hooked.succeeds)
    bad = enqueue(store, hooked.fails)
    nap = enqueue(store, hooked.snoozes, str(tmp_path / "marker"))
    stuck = enqueue(store, hooked.waits, str(tmp_path / "gate"))
    # Headers added by middleware at enqueue reach the execution.
    assert wait_until(store, ok.id, finished).result == {"request-id": "req-for-succeeds"}
    assert wait_until(store, bad.id, finished).status is Status.FAILED
    assert wait_until(store, nap.id, finished).result == "woken"
    wait_until(store, stuck.id, lambda t: t.status is Status.RUNNING)
    store.task_cancel(stuck.id)
    # Hooks run on their own thread, after the store took each ending: wait for all 12.
    wait_for(lambda: len([e for e in read(journal) if "hook" in e]) >= 12, "every hook")

    hooks = [(e["task"], e["hook"]) for e in read(journal) if "hook" in e]
    assert [h for t, h in hooks if t == ok.id] == ["started", "succeeded"]
    assert [h for t, h in hooks if t == bad.id] == ["started", "retrying", "started", "failed"]
    assert [h for t, h in hooks if t == nap.id] == ["started", "snoozed", "started", "succeeded"]
    assert [h for t, h in hooks if t == stuck.id] == ["started", "cancelled"]
    told = {(e["task"], e["hook"]): e for e in read(journal) if "hook" in e}
    assert told[ok.id, "succeeded"]["result"] == {"request-id": "req-for-succeeds"}
    assert told[bad.id, "retrying"]["error"] == "ValueError" and told[bad.id, "retrying"]["delay"]
    assert told[nap.id, "snoozed"]["delay"] == 0.1

    # The error tracker saw each failure where it was raised, frames and all.
    captured = [e for e in read(journal) if e.get("captured")]
    assert [e["task"] for e in captured] == [bad.id, bad.id]
    assert all("fails" in e["frames"] for e in captured)
    executed_in_child = {e["pid"] for e in captured} != {worker.pid}
    assert executed_in_child == ("processes" in worker.process.args)

    lines = [json.loads(line) for line in worker.lines]  # every line is one JSON object
    [final] = [ln for ln in lines if ln.get("task_id") == bad.id and ln.get("status") == "failed"]
    assert final["level"] == "error" and final["attempt"] == 2 and final["topic"] == "hooked"
    assert final["error"] == "ValueError: bad input"
    assert 'raise ValueError("bad input")' in final["traceback"]
    [done] = [ln for ln in lines if ln.get("task_id") == ok.id and ln.get("status") == "done"]
    assert done["level"] == "info" and done["duration"] >= 0
    [broken] = [ln for ln in lines if "hook" in ln["message"] and "raised" in ln["message"]]
    assert broken["level"] == "error" and "a hook that raises" in broken["traceback"]
    assert worker.process.poll() is None  # the raising hook was not fatal
