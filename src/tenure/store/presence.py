"""Who is alive and who leads: the worker registry (heartbeats, the rows the
dashboard and ``tenure workers`` list) and leadership leases (one scheduler
leads at a time), a part of :class:`~tenure.store.Store`.

Neither touches a task: they sit beside the task protocol, so that its module
reads as the task's life alone.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from tenure.store import validate
from tenure.store.backend import Backend
from tenure.store.types import LeaderLease, LeaderState, WorkerInfo


class Presence(Backend):
    """The worker registry and leadership (a part of :class:`~tenure.store.Store`)."""

    # -- the worker registry ------------------------------------------------------

    def worker_beat(self, info: WorkerInfo, *, now: datetime | None = None) -> WorkerInfo:
        """Record that a worker is alive (insert or update its row)."""
        validate.text(info.id, "id")
        validate.text(info.host, "host")
        validate.integer(info.pid, "pid", minimum=0)
        validate.integer(info.concurrency, "concurrency", minimum=1, bounds=validate.INT32)
        validate.integer(info.held, "held", minimum=0, bounds=validate.INT32)
        validate.text(info.pool, "pool")
        validate.moment(now, "now")
        # Stored as validated: deduplicated and in a stable order.
        checked = replace(
            info,
            topics=validate.tag_set(info.topics, "topics"),
            tags=validate.tag_set(info.tags, "tags"),
        )
        return self._worker_beat(checked, now)

    def worker_remove(self, worker_id: str) -> bool:
        """Remove a worker's row (a clean exit); False if there was none."""
        return self._worker_remove(validate.text(worker_id, "worker_id"))

    def worker_list(self) -> list[WorkerInfo]:
        """Every registered worker, oldest first."""
        return self._worker_list()

    def worker_prune(self, silent_for: float, *, now: datetime | None = None) -> int:
        """Remove workers not seen for ``silent_for`` seconds; return how many."""
        silent_for = validate.seconds(silent_for, "silent_for")
        validate.moment(now, "now")
        return self._worker_prune(silent_for, now)

    # -- leadership ----------------------------------------------------------------

    def leader_acquire(self, name: str, owner: str, lease_seconds: float) -> LeaderLease | None:
        """Become leader of ``name`` if it is vacant; ``None`` if someone holds it."""
        validate.text(name, "name")
        validate.text(owner, "owner")
        return self._leader_acquire(name, owner, validate.seconds(lease_seconds, "lease_seconds"))

    def leader_extend(self, lease: LeaderLease, lease_seconds: float) -> LeaderState:
        """Keep leadership; ``LeaseLost`` if it was revoked or given up."""
        validate.leader_lease(lease)
        return self._leader_extend(lease, validate.seconds(lease_seconds, "lease_seconds"))

    def leader_get(self, name: str) -> LeaderState | None:
        """The leadership of ``name`` as stored, or ``None`` if never held."""
        return self._leader_get(validate.text(name, "name"))

    def leader_revoke(self, name: str, record_ver: int) -> bool:
        """Vacate ``name`` if it is still at ``record_ver`` (compare-and-set)."""
        validate.text(name, "name")
        return self._leader_revoke(name, validate.integer(record_ver, "record_ver", minimum=1))

    def leader_resign(self, lease: LeaderLease) -> bool:
        """Give leadership up; False if it was not held under ``lease``."""
        return self._leader_resign(validate.leader_lease(lease))
