"""Fixtures of the integration tests: real ``tenure worker`` processes, a small
disk to fill, and a PostgreSQL database holding a million tasks."""

from __future__ import annotations

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
