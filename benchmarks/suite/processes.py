"""Real ``tenure worker`` processes, started as a user starts them, and waiting on the store.

Workers run the bench App with the default settings (4 threads, 1 s idle poll,
the scheduler hosted), except that they log only warnings: one INFO line per
task start and end would measure the log handler. They run in the checkout's
root, so ``--app benchmarks.suite.app:app`` imports from wherever the suite was
started. Their stderr goes to a file that is shown if one of them dies.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

from benchmarks.suite import ROOT, BenchError
from benchmarks.suite.app import APP_PATH

# The defaults (4 threads, prefetch following the work, a log line per task at
# INFO, into a file); the scheduler runs, as in production.
WORKER_OPTIONS: tuple[str, ...] = ()
STOP_TIMEOUT = 30.0


def worker_argv(url: str) -> list[str]:
    """The command line of one benchmark worker."""
    return [sys.executable, "-m", "tenure", "worker", "--app", APP_PATH, "--url", url]


def bench_workers(url: str, count: int) -> Workers:
    """``count`` workers of the bench App on ``url``, with the suite's options."""
    return Workers([*worker_argv(url), *WORKER_OPTIONS], count, cwd=ROOT)


class Workers:
    """``count`` processes running ``argv`` (by default ``tenure worker`` on a
    URL, see :func:`bench_workers`), stopped with SIGTERM, as a deployment stops
    them, on leaving the block. Their stderr goes to a file shown if one dies."""

    def __init__(
        self,
        argv: list[str],
        count: int,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> None:
        self.argv = argv
        self.count = count
        self.env = None if env is None else {**os.environ, **env}
        self.cwd = cwd
        self._running: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []

    def __enter__(self) -> Workers:
        for _ in range(self.count):
            log = tempfile.TemporaryFile()
            # The argv is this interpreter (or a tool of its venv) with the
            # benchmark's fixed options and store URL: nothing from outside.
            process = subprocess.Popen(  # noqa: S603
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
            self._running.append((process, log))
        return self

    @property
    def pids(self) -> list[int]:
        """The worker processes' ids, in the order they were started."""
        return [process.pid for process, _ in self._running]

    def check(self) -> None:
        """Raise if a worker has exited: the measurement would never end."""
        for process, log in self._running:
            if process.poll() is not None:
                log.seek(0)
                tail = log.read().decode(errors="replace")[-2000:]
                raise BenchError(f"a worker exited with code {process.returncode}:\n{tail}")

    def __exit__(self, *_: object) -> None:
        for process, _log in self._running:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process, log in self._running:
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()
        self._running.clear()


def wait_until(
    reached: Callable[[], bool],
    what: str,
    *,
    workers: Workers | None = None,
    interval: float = 0.05,
    timeout: float = 600.0,
) -> float:
    """Poll ``reached`` every ``interval`` seconds; the ``time.perf_counter()``
    at which it was first seen true."""
    deadline = time.perf_counter() + timeout
    while True:
        if reached():
            return time.perf_counter()
        if workers is not None:
            workers.check()
        if time.perf_counter() > deadline:
            raise BenchError(f"gave up after {timeout:.0f} s waiting until {what}")
        time.sleep(interval)
