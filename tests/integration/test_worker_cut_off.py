"""A worker cut off from PostgreSQL fences itself on time.

A TCP proxy between a real worker process and the server forwards every byte
until it is cut: then nothing passes either way and no connection closes, as
when a host's network is cut (TCP would wait many minutes before it gave up).

- The worker's round trips hang; its own monotonic clock must still end the
  execution once its lease has run out, before the supervisor can give the
  task to another worker.
- A reservation whose answer is held up past the lease it took (here: cut as
  the answer naming the task comes back, healed after another worker ran it)
  must not run when it finally arrives.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenure import Status
from tenure.store import open_store
from tests.apps import basic
from tests.integration.proxies import Proxy, recv, start
from tests.integration.workers import WorkerProcess, enqueue, wait_until

LEASE = 2.0


class Cable(Proxy):
    """A proxy that passes bytes until :attr:`cut` is set (by the test, or by
    bytes containing :attr:`cut_at` passing), then holds them, never closing
    anything, until :attr:`healed` is set."""

    def __init__(self, url: str) -> None:
        self.cut = threading.Event()
        self.healed = threading.Event()
        self.cut_at: bytes | None = None
        super().__init__(url)

    def pair(self, client: socket.socket, server: socket.socket) -> None:
        start(self._pass, client, server)
        start(self._pass, server, client)

    def _pass(self, source: socket.socket, sink: socket.socket) -> None:
        while data := recv(source):
            if self.cut_at is not None and self.cut_at in data:
                self.cut.set()
            if self.cut.is_set():
                self.healed.wait()
            with contextlib.suppress(OSError):
                sink.sendall(data)

    def close(self) -> None:
        self.healed.set()
        super().close()


@pytest.fixture
def cable(blank_postgres_url: str) -> Iterator[Cable]:
    made = Cable(blank_postgres_url)
    yield made
    made.close()


def test_a_worker_whose_round_trips_hang_abandons_its_task_when_its_lease_runs_out(
    blank_postgres_url: str, cable: Cable, tmp_path: Path
) -> None:
    through = cable.url(blank_postgres_url)
    gate, began = tmp_path / "gate", tmp_path / "began"
    with open_store(blank_postgres_url) as store:
        worker = WorkerProcess(
            through, "--lease", str(LEASE), "--no-scheduler", app="tests.apps.basic:app"
        )
        try:
            task = enqueue(store, basic.blocks, str(gate), "late", str(began))
            wait_until(store, task.id, lambda t: t.status is Status.RUNNING)
            wait_until(store, task.id, lambda _: began.exists())

            cable.cut.set()  # every round trip of the worker hangs from now on

            worker.wait_for_log("lease ran out", timeout=LEASE + 2)
        finally:
            cable.healed.set()
            gate.touch()
            worker.stop()


def test_a_reservation_answered_after_its_lease_ran_out_is_not_run(
    blank_postgres_url: str, cable: Cable, tmp_path: Path
) -> None:
    through = cable.url(blank_postgres_url)
    gate = tmp_path / "gate"
    gate.touch()  # the task ends as soon as it runs, wherever
    processes: list[WorkerProcess] = []
    with open_store(blank_postgres_url) as store:
        try:
            cut_off = WorkerProcess(
                through, "--lease", str(LEASE), "--no-scheduler", app="tests.apps.basic:app"
            )
            processes.append(cut_off)
            new = basic.holds.new_task((str(gate),), {})
            cable.cut_at = new.id.encode()
            store.task_create(basic.holds.prepared(new))
            # Reserved on the server; the answer is held in the cable.
            wait_until(store, new.id, lambda t: t.status is Status.RUNNING)
            assert cable.cut.is_set()
            processes.append(
                WorkerProcess(blank_postgres_url, "--lease", str(LEASE), app="tests.apps.basic:app")
            )
            done = wait_until(store, new.id, lambda t: t.finished, timeout=30)
            assert done.status is Status.DONE and done.attempts == 2

            cable.healed.set()  # the old answer arrives, long after its lease

            cut_off.wait_for_log(f"task {new.id} (attempt 1) reserved")
            assert not [line for line in cut_off.lines if new.id in line and "attempt=" in line]
        finally:
            cable.healed.set()
            for process in processes:
                process.stop()
