"""Fixtures of the integration tests: real ``tenure worker`` processes, a small
disk to fill, and a PostgreSQL database holding a million tasks."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tenure.store import open_store
from tests.conftest import _require_postgres, shared_database
from tests.integration.workers import WorkerProcess


@pytest.fixture
def workers(store_url: str) -> Iterator[list[WorkerProcess]]:
    """The workers a test started; each is stopped when it ends."""
    started: list[WorkerProcess] = []
    yield started
    for worker in started:
        worker.stop()


@pytest.fixture
def start(store_url: str, workers: list[WorkerProcess]) -> Callable[..., WorkerProcess]:
    """Start a worker on the test's store with these options."""

    def start_worker(*options: str) -> WorkerProcess:
        worker = WorkerProcess(store_url, *options)
        workers.append(worker)
        return worker

    return start_worker


@pytest.fixture
def three_by_four(start: Callable[..., WorkerProcess]) -> list[WorkerProcess]:
    """Three worker processes of four threads each, on the test's store: the
    shape the flow-control tests hold their claims to."""
    return [start("--concurrency", "4") for _ in range(3)]


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MB tmpfs of this test's own, unmounted after it. Where mounting is
    forbidden (not root) the test is skipped with the reason, or fails when the
    run requires every test (``TENURE_REQUIRE_POSTGRES=1``, as in CI)."""
    from chaos.scenarios.sqlite_faults import DiskUnavailable, small_disk

    try:
        with small_disk(tmp_path, size="16m") as mounted:
            yield mounted
    except DiskUnavailable as exc:
        if _require_postgres():
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def million_url(postgres_url: str) -> str:
    """A PostgreSQL database holding 1,000,000 tasks
    (:mod:`tests.integration.million`), made once per run, whichever process
    asks first, for the tests that only read it (the dashboard's and the
    metrics' at scale), and dropped after the run."""
    from tests.integration.million import fill_million

    def fill(url: str) -> None:
        with open_store(url) as store:
            fill_million(store, url)

    return shared_database("million", fill)


SERVED_TOKEN = "served-api-token-0123456789abcdef"
"""The operator token of the ``served`` fixture's ``tenure serve``."""


@pytest.fixture
def served(store_url: str, tmp_path: Path) -> Iterator[str]:
    """The base URL of a ``tenure serve`` of the API tests' App, on a free port."""
    command = [sys.executable, "-m", "tenure", "serve", "--app", "tests.apps.api:app",
               "--port", "0", "--url", store_url]  # fmt: skip
    env = {**os.environ, "TENURE_API_TOKEN": SERVED_TOKEN}
    with subprocess.Popen(
        command, cwd=Path(__file__).resolve().parents[2], env=env, stderr=subprocess.PIPE, text=True
    ) as server:
        assert server.stderr is not None
        seen = [server.stderr.readline()]
        while seen[-1] and "HTTP API of" not in seen[-1]:
            seen.append(server.stderr.readline())
        port = re.search(r"http://127\.0\.0\.1:(\d+)/api", seen[-1])
        assert port, "".join(seen)
        try:
            yield f"http://127.0.0.1:{port[1]}"
        finally:
            server.send_signal(signal.SIGTERM)
            server.communicate(timeout=20)
