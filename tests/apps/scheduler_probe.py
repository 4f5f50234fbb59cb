"""A scheduler process that journals each cycle it runs as leader.

Usage: python -m tests.apps.scheduler_probe URL OWNER JOURNAL [LEASE]. Each leader
cycle appends ``owner start end`` (CLOCK_MONOTONIC, shared by all processes of
one host) with one O_APPEND write, which survives SIGKILL. Every cycle, leader or
not, then appends its end time to ``JOURNAL.OWNER.beat``, so a test can tell when
a process has run a whole cycle after a moment it chose. Stops on SIGTERM.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from tenure import open_store
from tenure.maintenance.scheduler import Scheduler


def main() -> None:
    url, owner, journal = sys.argv[1:4]
    lease = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
    scheduler = Scheduler(open_store(url), owner, interval=0.05, leader_lease=lease)
    out = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    beats = os.open(f"{journal}.{owner}.beat", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    while not stop.is_set():
        start = time.monotonic()
        if scheduler.run_once().leader and scheduler.leadership.is_leader:
            os.write(out, f"{owner} {start:.6f} {time.monotonic():.6f}\n".encode())
        os.write(beats, f"{time.monotonic():.6f}\n".encode())
        stop.wait(0.05)
    scheduler.leadership.resign()


if __name__ == "__main__":
    main()
