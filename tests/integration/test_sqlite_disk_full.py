"""A full disk is a passing outage for the SQLite store, not a refusal: the
ending of a task that finished while the disk was full is written once space
returns (within the lease), so the task is not run a second time.

The database lives on a small tmpfs of the test's own (mounting needs root;
elsewhere the test is skipped with the reason), filled by a file the test then
removes, while a real ``tenure worker`` process runs the task.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chaos.scenarios.sqlite_faults import fill

from tenure import Status
from tenure.store import open_store
from tests.apps.basic import holds
from tests.integration.workers import WorkerProcess, enqueue, wait_until

pytestmark = pytest.mark.slow


def test_an_ending_written_while_the_disk_is_full_is_kept_not_rerun(
    disk: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{disk / 'tenure.db'}"
    gate = tmp_path / "gate"
    with open_store(url) as store:
        worker = WorkerProcess(url, "--lease", "6")
        try:
            task = enqueue(store, holds, str(gate))
            wait_until(store, task.id, lambda t: t.status is Status.RUNNING)
            filler = fill(disk)
            gate.touch()  # the body returns; its ending meets the full disk
            worker.wait_for_log("disk is full")
            filler.unlink()
            ended = wait_until(store, task.id, lambda t: t.finished, timeout=30)
        finally:
            worker.stop()
    assert ended.status is Status.DONE
    assert ended.attempts == 1, "the task ran again: its ending was dropped, not retried"
    assert ended.result is not None and ended.result["pid"] == worker.pid
