"""The lease supervisor: take back the tasks of dead workers, trusting no clock
but this process's own monotonic one.

Mark-sweep:

- **mark** lists every leased task (running and snoozed) and remembers, per task,
  the last ``record_ver`` seen and a projected expiry on this process's monotonic
  clock: now + the task's window (the lease time for a running task, the snooze
  time for a snoozed one). An entry whose ``record_ver`` changed is marked anew;
  entries of tasks no longer leased are forgotten.
- **sweep** revokes, by compare-and-set on the remembered ``record_ver``, every
  task whose projection has passed. A keepalive changes ``record_ver``, so a live
  lease is never revoked whatever any wall clock says; a revoke that loses the
  race changes nothing. Snoozed tasks wake up through the same sweep.

Transient store errors keep the entry for the next cycle; any other error is
logged and the entry dropped (it is marked again if the task is still leased).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tenure.errors import StoreUnavailable, TenureError
from tenure.store import Store
from tenure.task import Status, Task

log = logging.getLogger("tenure.supervisor")

MonotonicClock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Mark:
    record_ver: int
    expires: float
    snoozed: bool = False


@dataclass(slots=True)
class SweepReport:
    """What one cycle did."""

    watched: int = 0
    revoked: list[Task] = field(default_factory=list)
    lost_races: int = 0
    errors: int = 0


class Supervisor:
    """Watches leased tasks and revokes those whose holders stopped renewing."""

    def __init__(
        self,
        store: Store,
        *,
        topics: Sequence[str] | None = None,
        clock: MonotonicClock = time.monotonic,
        default_window: float = 30.0,
        page_size: int = 1000,
    ) -> None:
        self.store = store
        self.topics = topics
        self.clock = clock
        self.default_window = default_window
        self.page_size = page_size
        self.marks: dict[str, Mark] = {}

    def run_once(self) -> SweepReport:
        """One mark and one sweep."""
        report = SweepReport(watched=self.mark())
        self.sweep(report)
        return report

    def mark(self) -> int:
        """Remember each leased task's version and projected expiry; return how many."""
        seen: set[str] = set()
        cursor = None
        while True:
            page = self.store.task_list_leased(
                topics=self.topics, cursor=cursor, limit=self.page_size
            )
            now = self.clock()
            for task in page.tasks:
                seen.add(task.id)
                known = self.marks.get(task.id)
                if known is None or known.record_ver != task.record_ver:
                    snoozed = task.status is Status.SNOOZED
                    self.marks[task.id] = Mark(task.record_ver, now + self._window(task), snoozed)
            if page.cursor is None:
                break
            cursor = page.cursor
        for task_id in self.marks.keys() - seen:
            del self.marks[task_id]
        return len(seen)

    def _window(self, task: Task) -> float:
        return task.lease_seconds if task.lease_seconds is not None else self.default_window

    def sweep(self, report: SweepReport | None = None) -> SweepReport:
        """Revoke every marked task whose projected expiry has passed."""
        report = report or SweepReport(watched=len(self.marks))
        now = self.clock()
        for task_id, mark in list(self.marks.items()):
            if now < mark.expires:
                continue
            try:
                revoked = self.store.task_revoke(task_id, mark.record_ver)
            except StoreUnavailable as exc:
                log.warning("revoke of %s failed, will retry: %s", task_id, exc)
                report.errors += 1
                continue
            except TenureError as exc:
                log.error("revoke of %s failed, dropping it: %s", task_id, exc)
                report.errors += 1
                del self.marks[task_id]
                continue
            del self.marks[task_id]
            if revoked is None:
                report.lost_races += 1  # its holder wrote since: alive after all
                continue
            report.revoked.append(revoked)
            _tell(revoked, mark)
        return report


def _tell(revoked: Task, mark: Mark) -> None:
    extra = {"task_id": revoked.id, "task_name": revoked.name, "status": str(revoked.status)}
    if mark.snoozed:
        log.info(
            "task %s %s woke up from its snooze -> %s",
            revoked.id,
            revoked.name,
            revoked.status,
            extra=extra,
        )
        return
    log.warning(
        "task %s %s: its holder %s went silent and its lease lapsed; taken back -> %s",
        revoked.id,
        revoked.name,
        revoked.assignee,
        revoked.status,
        extra=extra,
    )
