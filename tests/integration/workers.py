"""Runs ``tenure worker`` as a real OS process for tests, and waits on the store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tenure import Store, Task
from tenure.function import TaskFunction
from tenure.store import NewTask

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.apps.basic:app"
T = TypeVar("T")


# Debian's faketime package, wherever the machine's multiarch directory is.
FAKETIME_LIB = next(
    iter(sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))),
    Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"),
)
SHIM = ROOT / "tests" / "faketime_shim"


def skewed(offset: str) -> dict[str, str]:
    """Environment that runs a process with its wall clock moved by ``offset``
    (libfaketime, e.g. "+2h"), its monotonic clock left real."""
    return {
        "LD_PRELOAD": str(FAKETIME_LIB),
        "FAKETIME": offset,
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "PYTHONPATH": f"{SHIM}{os.pathsep}{ROOT}",
    }


class WorkerProcess:
    """A ``tenure worker`` (or other long-running tenure command) subprocess whose
    log lines are collected as they come."""

    def __init__(
        self,
        url: str,
        *options: str,
        app: str = APP,
        command: str = "worker",
        env: dict[str, str] | None = None,
        ready: str = "started",
    ) -> None:
        argv = [sys.executable, "-m", "tenure", command, "--app", app, "--url", url]
        if command == "worker":
            argv += ["--poll", "0.05"]
        argv += ["--log-level", "INFO", *options]
        environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
        self.process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=environment,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self.lines: list[str] = []
        self._new_line = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.wait_for_log(ready, timeout=30)

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._new_line:
                self.lines.append(line.rstrip())
                self._new_line.notify_all()
        self.process.stderr.close()
        self.process.wait()
        with self._new_line:  # the process ended: wake anyone waiting for a line
            self._new_line.notify_all()

    def wait_for_log(self, *texts: str, timeout: float = 15) -> str:
        """The first log line containing any of ``texts``; fails after ``timeout``."""

        def first() -> str | None:
            return next((ln for ln in self.lines if any(t in ln for t in texts)), None)

        with self._new_line:
            self._new_line.wait_for(
                lambda: first() is not None or self.process.poll() is not None, timeout
            )
            match = first()
        if match is None:
            log = "\n".join(self.lines[-30:])
            raise AssertionError(f"no log line with any of {texts!r}; log:\n{log}")
        return match

    @property
    def pid(self) -> int:
        return self.process.pid

    def signal(self, signum: int = signal.SIGTERM) -> None:
        self.process.send_signal(signum)

    def wait_exit(self, timeout: float = 30) -> int:
        """The exit code; fails with the process's last log lines after ``timeout``."""
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            log = "\n".join(self.lines[-30:])
            raise AssertionError(f"still running after {timeout} s; log:\n{log}") from None
        self._reader.join(10)
        return code

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.wait_exit(10)


def enqueue(store: Store, function: TaskFunction[Any, Any], *args: Any, **kwargs: Any) -> Task:
    """Create the task ``function.enqueue`` would (middleware headers too), in ``store``."""
    return store.task_create(function.prepared(function.new_task(args, kwargs)))


def enqueue_new(store: Store, task: NewTask) -> Task:
    return store.task_create(task)


def wait_for(look: Callable[[], T], what: str, timeout: float = 30) -> T:
    """Poll ``look`` until it returns something true, and return that; fail
    naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not (found := look()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
    return found


def wait_until(
    store: Store, task_id: str, check: Callable[[Task], bool], timeout: float = 20
) -> Task:
    """Poll the task until ``check`` holds; fail with its last state after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        task = store.task_get(task_id)
        assert task is not None
        if check(task):
            return task
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting on {task_id}: {task}")
        time.sleep(0.01)


def finished(task: Task) -> bool:
    return task.finished
