"""Hooks are user code: they run on a thread of their own, so a slow or failing
one never holds up the worker's keepalive, completer or event loop."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tenure import Lease, Status, Task, open_store
from tenure.hooks import Hooks, Outcome
from tenure.store.types import TaskState
from tenure.worker.held import Held
from tenure.worker.runner import Succeeded
from tenure.worker.telling import Teller


def held(task_id: str) -> Held:
    task = Task(
        id=task_id, topic="t", name="n", status=Status.RUNNING, created_at=datetime.now(UTC)
    )
    return Held(task, Lease(task_id, "w", 2))


def done(task_id: str) -> TaskState:
    return TaskState(task_id, Status.DONE, 1, 3)


def test_a_slow_hook_does_not_hold_up_the_caller(tmp_path: Path) -> None:
    release, seen = threading.Event(), []
    hooks = Hooks()
    hooks.add("succeeded", lambda outcome: (release.wait(10), seen.append(outcome.task.id)))
    with open_store(f"sqlite:///{tmp_path / 't.db'}") as store:
        teller = Teller(store, hooks)
        teller.start()
        began = time.monotonic()
        for name in ("a", "b"):
            teller.ended(held(name), Succeeded(None), done(name), None)
        assert time.monotonic() - began < 1  # told at once, though the hook waits
        assert seen == []
        release.set()
        teller.close()
    assert seen == ["a", "b"]  # in order, all of them, before close returned


def test_a_full_queue_drops_outcomes_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    release = threading.Event()
    hooks = Hooks()
    hooks.add("succeeded", lambda _: release.wait(10))
    with open_store(f"sqlite:///{tmp_path / 't.db'}") as store:
        teller = Teller(store, hooks, capacity=2)
        teller.start()
        with caplog.at_level(logging.WARNING, logger="tenure.worker"):
            for name in "abcdef":
                teller.ended(held(name), Succeeded(None), done(name), None)
        release.set()
        teller.close()
    assert any("hooks fall behind" in r.getMessage() for r in caplog.records)


def test_a_hook_that_raises_is_logged_and_the_next_still_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[Outcome] = []
    hooks = Hooks()

    def broken(_: Outcome) -> None:
        raise SystemExit("a hook must not end the worker's threads")

    hooks.add("succeeded", broken)
    hooks.add("succeeded", seen.append)
    with open_store(f"sqlite:///{tmp_path / 't.db'}") as store:
        teller = Teller(store, hooks)
        teller.start()
        with caplog.at_level(logging.ERROR, logger="tenure.hooks"):
            teller.ended(held("a"), Succeeded(None), done("a"), None)
            teller.ended(held("b"), Succeeded(None), done("b"), None)
            teller.close()
    assert [o.task.id for o in seen] == ["a", "b"]
    assert sum("raised (ignored)" in r.getMessage() for r in caplog.records) == 2
