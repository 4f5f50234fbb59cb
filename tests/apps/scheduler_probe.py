"""A scheduler process that journals every step of every cycle it runs as leader.

Usage: python -m tests.apps.scheduler_probe URL OWNER JOURNAL [LEASE].

It runs the real ``Scheduler.run`` loop (cycle interval 0.05 s, leader lease
LEASE, 1 s by default). Each step that the scheduler's own code lets run (past
its leadership check in ``Scheduler._step``) journals ``OWNER begin STEP T``,
does the step, works ``STEP_WORK`` seconds more, then journals ``OWNER end STEP
T``: a leader cycle lasts about 80 ms, so two leaders acting at once would show
overlapping intervals. T is ``time.monotonic()``, Linux's CLOCK_MONOTONIC, one
clock for every process of the host. Each line is one O_APPEND write, which
SIGKILL cannot tear: a killed probe leaves at most one step begun and not ended.
After each cycle it journals ``OWNER cycle LEADING T`` (LEADING: 1 or 0, as the
cycle reported).

A worst-moment pause on demand: if the file ``JOURNAL.OWNER.pause`` exists when
the scheduler has just decided, as leader, to run a step (its leadership
confirmed by this cycle's extension, its step not yet begun), the probe removes
the file, journals ``OWNER pause - T``, stops itself with SIGSTOP and, once sent
SIGCONT, journals ``OWNER resume - T`` and goes on with the step exactly as a
process paused there would. Stops on SIGTERM.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable

from tenure import open_store
from tenure.maintenance.scheduler import CycleReport, Scheduler

STEP_WORK = 0.04  # seconds of work in each step, after the step itself


class ProbeScheduler(Scheduler):
    def __init__(self, url: str, owner: str, journal: str, lease: float) -> None:
        super().__init__(open_store(url), owner, interval=0.05, leader_lease=lease)
        self.owner = owner
        self.pause_request = f"{journal}.{owner}.pause"
        self.out = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT)

    def journal(self, kind: str, arg: str) -> None:
        os.write(self.out, f"{self.owner} {kind} {arg} {time.monotonic():.6f}\n".encode())

    def run_once(self) -> CycleReport:
        report = super().run_once()
        self.journal("cycle", str(int(report.leader)))
        return report

    def _step(self, report: CycleReport, name: str, step: Callable[[], None]) -> None:
        if os.path.exists(self.pause_request):
            os.unlink(self.pause_request)
            self.journal("pause", "-")
            os.kill(os.getpid(), signal.SIGSTOP)
            self.journal("resume", "-")

        def journaled() -> None:
            self.journal("begin", name)
            try:
                step()
                time.sleep(STEP_WORK)
            finally:
                self.journal("end", name)

        super()._step(report, name, journaled)


def main() -> None:
    url, owner, journal = sys.argv[1:4]
    lease = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
    scheduler = ProbeScheduler(url, owner, journal, lease)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    scheduler.run(stop)  # gives the leadership up when it stops


if __name__ == "__main__":
    main()
