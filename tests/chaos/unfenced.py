"""A deliberately broken build, for the chaos suite's own test: fencing disabled.

Workers load ``tests.chaos.unfenced:app``: the probe task on an App whose store
is a test double that ignores the lease token a holder names. Each keepalive
and each completion is rewritten to the lease the task holds now, so a write
from a superseded holder is accepted as if it were the current one's. The
worker's own fence is taken down too (it abandons nothing when its lease runs
out by its own clock): a zombie resumed after SIGSTOP goes on running its
stale execution, and its ending is accepted. The checker must say so.

Nothing outside the worker processes of that test imports this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from functools import cached_property

from chaos.probe import declare

import tenure
from tenure.store import Completion, Store, open_store
from tenure.store.types import StateOutcome
from tenure.task import Lease, Status
from tenure.worker.keepalive import Keepalive


def _current(store: Store, lease: Lease) -> Lease:
    """The lease the task holds now, whoever asks (the broken part)."""
    task = store.task_get(lease.task_id)
    if task is None or task.status is not Status.RUNNING or task.assignee is None:
        return lease
    return Lease(lease.task_id, task.assignee, task.lease_token or lease.token)


def unfenced(store: Store) -> Store:
    """``store`` with its keepalives and completions no longer fenced."""
    extend, complete = store.lease_extend_many, store.task_complete_many

    def lease_extend_many(
        leases: Sequence[Lease], lease_seconds: float, *, now: datetime | None = None
    ) -> list[StateOutcome]:
        return extend([_current(store, lease) for lease in leases], lease_seconds, now=now)

    def task_complete_many(
        completions: Sequence[Completion], *, now: datetime | None = None
    ) -> list[StateOutcome]:
        rewritten = [replace(c, lease=_current(store, c.lease)) for c in completions]
        return complete(rewritten, now=now)

    store.lease_extend_many = lease_extend_many  # type: ignore[method-assign]
    store.task_complete_many = task_complete_many  # type: ignore[method-assign]
    return store


class UnfencedApp(tenure.App):
    @cached_property
    def store(self) -> Store:
        return unfenced(open_store(self.url, max_payload_bytes=self.max_payload_bytes))


def _never_self_fence(self: Keepalive, now: float) -> None:
    """The worker no longer abandons an execution whose lease ran out."""
    del self, now


Keepalive._expire = _never_self_fence  # type: ignore[method-assign]

app = UnfencedApp()
task = declare(app)
