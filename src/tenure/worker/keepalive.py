"""Keeps held leases alive and ends executions that must not go on.

Three threads:
- keepalive: every ``lease / 3`` seconds, all held leases are extended in one
  round trip. A refused extension (lease lost, expired, task cancelled) means
  someone else may own the task now: the execution is abandoned at once and its
  ending will never be written.
- the cancel watch (see ``watch``): a running task the store says was taken
  from this worker (a cancel, a revocation) has its lease extended at once,
  alone, so that a cancel reaches its execution within about a second.
- the fence, ticking often, never waiting on the store:
  - self-fencing: if the store could not be reached long enough for a lease to
    run out by this process's own monotonic clock, the execution is abandoned
    too; the supervisor will give the task to another worker. A round trip that
    hangs (a network cut holds it until TCP gives up, many minutes later) must
    not hold this back, hence a thread of its own.
  - timeouts: an execution past its task's timeout is abandoned and its
    attempt failed with ``TimeoutError``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from tenure.errors import StoreError, TenureError
from tenure.hooks import Hooks
from tenure.store import Store
from tenure.task import TaskError
from tenure.worker.held import Held, Holdings
from tenure.worker.runner import Ending, Raised
from tenure.worker.telling import Teller
from tenure.worker.watch import CancelWatch

log = logging.getLogger("tenure.worker")

TICK = 0.02


class Keepalive:
    def __init__(
        self,
        store: Store,
        holdings: Holdings,
        lease_seconds: float,
        abandon: Callable[[str], None],
        finish: Callable[[Held, Ending], None],
        *,
        teller: Teller | None = None,
        retries_timeout: Callable[[str], bool] = lambda name: True,
    ) -> None:
        self.store = store
        self.holdings = holdings
        self.lease_seconds = lease_seconds
        self.interval = lease_seconds / 3
        self.abandon = abandon
        self.finish = finish
        self.teller = teller or Teller(store, Hooks())
        self.retries_timeout = retries_timeout
        """Whether a timed-out task of this name may be retried (its ``retry_on``)."""
        self._stop = threading.Event()
        self._fence = threading.Thread(target=self._fencing, name="tenure-fence", daemon=True)
        self._thread = threading.Thread(target=self._loop, name="tenure-keepalive", daemon=True)
        self._watch = CancelWatch(store, holdings, self.extend)

    def start(self) -> None:
        self._fence.start()
        self._thread.start()
        self._watch.start()

    def close(self) -> None:
        """Stop both threads; wait for a round trip under way at most one
        interval (a hung one is left to its daemon thread)."""
        self._stop.set()
        self._watch.close()
        self._fence.join()
        self._thread.join(self.interval)

    def _fencing(self) -> None:
        while not self._stop.wait(TICK):
            self._expire(time.monotonic())

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.keepalive()

    def _expire(self, now: float) -> None:
        for held in self.holdings:
            if held.ended:
                continue
            if held.deadline is not None and now >= held.deadline:
                if self.holdings.end(held):
                    self.abandon(held.task.id)
                    message = f"the task ran longer than its timeout of {held.task.timeout}s"
                    final = not self.retries_timeout(held.task.name)
                    self.finish(held, Raised(TaskError("TimeoutError", message), final=final))
            elif now >= held.expires and self.holdings.end(held):
                log.warning(
                    "task %s: lease ran out before it could be extended (this process was "
                    "paused, or the store unreachable); abandoning the execution",
                    held.task.id,
                )
                self.abandon(held.task.id)
                self.holdings.drop(held)

    def keepalive(self) -> None:
        """Extend every held lease in one round trip; abandon what was refused."""
        # Ended ones too: their endings wait to be written, and a lease that
        # lapsed meanwhile would make a finished task run again.
        self.extend(list(self.holdings))

    def extend(self, held_now: list[Held]) -> None:
        """Extend these leases in one round trip; abandon the executions of those
        refused (the keepalive's, and the cancel watch's). A task that wrote its
        own ending is left out: its transaction may hold its row until it ends."""
        held_now = [held for held in held_now if not held.wrote_own]
        if not held_now:
            return
        sent = time.monotonic()
        try:
            outcomes = self.store.lease_extend_many([h.lease for h in held_now], self.lease_seconds)
        except StoreError as exc:
            log.warning("keepalive failed, will retry: %s", exc)
            return
        for held, outcome in zip(held_now, outcomes, strict=True):
            if not isinstance(outcome, TenureError):
                held.expires = sent + self.lease_seconds
            elif self.holdings.end(held):
                try:
                    self.abandon(held.task.id)
                    self.teller.discarded(held, outcome)
                finally:
                    self.holdings.drop(held)
