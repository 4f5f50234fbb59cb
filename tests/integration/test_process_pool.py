"""The process pool's children, as real processes: their start-up never eats a
task's timeout, but a start that hangs or fails fails the attempt, once; and
closing the pool ends every child, those still importing too."""

from __future__ import annotations

import multiprocessing
import queue
import time
from pathlib import Path

import pytest

from tenure import Lease, Store
from tenure.worker.processes import ProcessExecutor
from tenure.worker.runner import Ending, Raised
from tests.apps import basic, failing_import
from tests.executions import running_task
from tests.integration.workers import WorkerProcess, enqueue, wait_for

pytestmark = pytest.mark.slow

APP = "tests.apps.failing_import:app"


@pytest.fixture
def import_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "imports"
    log.touch()
    monkeypatch.setenv("TENURE_TEST_IMPORT_LOG", str(log))
    return log


def ending_of(pool: ProcessExecutor) -> Ending:
    endings: queue.Queue[Ending] = queue.Queue()
    pool.submit(
        running_task(failing_import.noop, "t1"),
        Lease("t1", "w", 1),
        lambda _, e: endings.put(e),
        lambda _: True,
    )
    return endings.get(timeout=60)


def test_a_child_whose_import_hangs_fails_the_attempt_after_the_start_limit(
    import_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TENURE_TEST_CHILD_IMPORT", "hang")
    pool = ProcessExecutor(APP, 1, start_limit=1.0)
    try:
        began = time.monotonic()
        ending = ending_of(pool)
        waited = time.monotonic() - began
    finally:
        pool.close()
    assert isinstance(ending, Raised) and ending.error.type == "WorkerStartTimeout"
    assert "within 1s" in ending.error.message
    assert 1.0 <= waited < 30
    assert len(import_log.read_text().split()) == 1
    assert multiprocessing.active_children() == []  # the hung child was killed


def test_a_child_that_dies_importing_fails_the_attempt_without_a_second_import(
    import_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TENURE_TEST_CHILD_IMPORT", "fail")
    pool = ProcessExecutor(APP, 1)
    try:
        ending = ending_of(pool)
    finally:
        pool.close()
    assert isinstance(ending, Raised) and ending.error.type == "WorkerCrashed"
    assert "importing" in ending.error.message
    assert len(import_log.read_text().split()) == 1  # not imported again for the same task


def test_closing_the_pool_ends_children_still_importing(
    import_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TENURE_TEST_CHILD_IMPORT", "hang")
    pool = ProcessExecutor(APP, 2)
    # A task waits for one of them to be ready: that child is neither idle nor running.
    pool.submit(
        running_task(failing_import.noop, "t1"),
        Lease("t1", "w", 1),
        lambda *_: None,
        lambda _: True,
    )
    wait_for(lambda: len(import_log.read_text().split()) == 2, "both children importing")
    began = time.monotonic()
    pool.close()
    assert time.monotonic() - began < 15  # one grace period for all, then killed
    assert multiprocessing.active_children() == []


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie nobody reaps has ended too)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


@pytest.mark.slow
def test_a_child_ends_with_its_killed_worker_instead_of_running_on(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    worker = WorkerProcess(store_url, "--pool", "processes", "--concurrency", "1")
    try:
        pid_file = tmp_path / "child.pid"
        enqueue(store, basic.blocks_here, str(tmp_path / "never"), str(pid_file))
        wait_for(pid_file.exists, "the task to start in a child")
        wait_for(lambda: pid_file.read_text().strip(), "its pid")
        child = int(pid_file.read_text())
        assert child != worker.pid and not _gone(child)
        worker.process.kill()  # the OOM killer's way: no cleanup at all
        wait_for(lambda: _gone(child), "the orphaned child to end", timeout=5)
    finally:
        worker.stop()
