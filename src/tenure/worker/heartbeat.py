"""The worker's row in the registry: who it is, what it serves, how much it holds.

Beaten every few seconds so the CLI and dashboard can show who is alive, and
removed on a clean exit. Each beat reads the row back: an operator's new
concurrency for the worker (``tenure workers scale``) comes to it this way. A
row left by a worker that died is pruned by the scheduler once silent for long
(it is for people to see; no recovery depends on it: the lease supervisor
recovers the tasks).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable

from tenure.errors import TenureError
from tenure.store import Store
from tenure.store.types import WorkerInfo

log = logging.getLogger("tenure.worker")


class Heartbeat:
    def __init__(
        self,
        store: Store,
        describe: Callable[[], WorkerInfo],
        interval: float = 5.0,
        told: Callable[[WorkerInfo], None] | None = None,
    ) -> None:
        self.store = store
        self.describe = describe
        self.interval = interval
        self.told = told
        """Given the row as each beat wrote it."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tenure-heartbeat", daemon=True)

    def start(self) -> None:
        self.beat()
        self._thread.start()

    def beat(self) -> None:
        try:
            row = self.store.worker_beat(self.describe())
        except TenureError as exc:
            log.warning("worker heartbeat failed: %s", exc)
            return
        if self.told is not None:
            self.told(row)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()

    def close(self, worker_id: str) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        try:
            self.store.worker_remove(worker_id)
        except TenureError as exc:
            log.warning("could not remove the worker's registry row: %s", exc)


def this_host() -> tuple[str, int]:
    return socket.gethostname(), os.getpid()
