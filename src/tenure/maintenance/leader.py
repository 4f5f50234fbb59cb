"""Leader election over the store, immune to clock skew.

Exactly one process runs the scheduler cycle. The protocol, on one row per
leadership in the store:

- A **leader** extends its row every cycle; each extension bumps ``record_ver``.
  It also keeps its own deadline on its monotonic clock: the start of its last
  successful extension plus the lease. Past that deadline it does nothing more
  (it may have been paused, or cut off from the store) until an extension
  succeeds again, which proves no one took over meanwhile.
- A **standby** tries to acquire the vacant row; failing that, it watches the
  row's ``record_ver`` exactly as the lease supervisor watches a task: the first
  time it sees a version it projects ``now + lease`` on its own monotonic clock,
  and only if the version is unchanged past that projection does it revoke,
  by compare-and-set on that version, then try to acquire.

A standby first sees a version only after the extension that wrote it
committed, so its projection ends no sooner than the leader's own deadline: the
old leader has stopped acting before anyone can take over. No wall clock of any
machine is compared with another's. A fenced old leader's writes are refused
(``LeaseLost``), and every step of the cycle is idempotent and compare-and-set,
so even a leader that acts late changes nothing it should not.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from tenure.errors import LeaseLost, StoreError
from tenure.maintenance.supervisor import Mark
from tenure.store import Store
from tenure.store.types import LeaderLease

log = logging.getLogger("tenure.leader")

SCHEDULER = "scheduler"
"""The leadership the scheduler's cycle runs under."""


class Leadership:
    """One process's view of the leadership called ``name``."""

    def __init__(
        self,
        store: Store,
        owner: str,
        *,
        name: str = SCHEDULER,
        lease_seconds: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.owner = owner
        self.name = name
        self.lease_seconds = lease_seconds
        self.clock = clock
        self.lease: LeaderLease | None = None
        self._deadline = 0.0
        self._watch: Mark | None = None

    @property
    def is_leader(self) -> bool:
        """Whether this process holds the leadership by its own clock, now."""
        return self.lease is not None and self.clock() < self._deadline

    def tick(self) -> bool:
        """Keep or seek the leadership; return whether this process leads now."""
        try:
            if self.lease is not None:
                return self._keep()
            return self._seek()
        except StoreError as exc:
            log.warning("leadership %s: store error, %s", self.name, exc)
            return self.is_leader

    def _keep(self) -> bool:
        """Extend; success proves nobody took over, even after a pause past the
        deadline (a revoke would have changed the row and made this fail)."""
        assert self.lease is not None
        sent = self.clock()
        try:
            self.store.leader_extend(self.lease, self.lease_seconds)
        except LeaseLost:
            self._step_down("another process revoked it")
            return False
        self._deadline = sent + self.lease_seconds
        return True

    def _seek(self) -> bool:
        now = self.clock()
        if self._acquire(now):
            return True
        state = self.store.leader_get(self.name)
        if state is None or state.owner is None:
            self._watch = None
            return False
        if self._watch is None or self._watch.record_ver != state.record_ver:
            self._watch = Mark(state.record_ver, now + state.lease_seconds)
            return False
        if now < self._watch.expires:
            return False
        if self.store.leader_revoke(self.name, self._watch.record_ver):
            log.warning("leadership %s: %s went silent; revoked", self.name, state.owner)
        self._watch = None
        return self._acquire(self.clock())

    def _acquire(self, now: float) -> bool:
        lease = self.store.leader_acquire(self.name, self.owner, self.lease_seconds)
        if lease is None:
            return False
        self.lease = lease
        self._deadline = now + self.lease_seconds
        self._watch = None
        log.info("leadership %s: %s elected (token %d)", self.name, self.owner, lease.token)
        return True

    def _step_down(self, why: str) -> None:
        log.warning("leadership %s: %s steps down: %s", self.name, self.owner, why)
        self.lease = None

    def resign(self) -> None:
        """Give the leadership up at once, so a standby can take it without waiting."""
        if self.lease is None:
            return
        try:
            self.store.leader_resign(self.lease)
        except StoreError as exc:
            log.warning("leadership %s: could not resign: %s", self.name, exc)
        self.lease = None
