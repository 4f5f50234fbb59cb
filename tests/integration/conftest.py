"""Fixtures of the tests that run real ``tenure worker`` processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

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
