"""An event follower of a scenario: ``python -m chaos.follower URL``.

It follows the store's event log with :meth:`tenure.events.Events.follow` and
journals every event it is handed (``seen``: the event's cursor, task, new
status and attempt, and how long after the event's commit it arrived), as a
deployment's follower would save each event and its cursor in one write. A
follower SIGKILLed at any instant leaves its journal whole up to its last line;
the one started in its place resumes after the last cursor journaled, as the
event log's contract asks of a follower that restarts (``resume``).

Each follower holds a *slot*: the lowest-numbered one whose lock file no live
follower holds (a kernel lock, released the moment its holder dies). The slot's
journal, ``follower-slotN.jsonl``, is written by one life of the slot after
another, never two at once, so its last line is the slot's position.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import time
from itertools import count
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from chaos.journal import FOLDER_VARIABLE, SUFFIX, Journal, Tail
from tenure.errors import StoreUnavailable, TenureError
from tenure.events import Events
from tenure.store import Store, open_store
from tenure.store.types import Event

if TYPE_CHECKING:
    from chaos.harness import Harness

PREFIX = "follower-slot"
"""The name of a slot's journal and lock file: ``follower-slotN.jsonl`` and ``.lock``."""
OPEN_PATIENCE = 60.0
"""Seconds a starting follower keeps trying to reach the store."""
OPEN_PAUSE = 0.2
"""Seconds between two attempts."""
TAIL_BYTES = 16_384
"""Bytes read from a journal's end to find its last line."""


def journal_path(folder: Path, slot: int) -> Path:
    return folder / f"{PREFIX}{slot}{SUFFIX}"


def claim(folder: Path) -> tuple[int, int]:
    """The lowest free slot in ``folder`` and the descriptor that holds its lock
    (kept open for the life of the process)."""
    for slot in count():
        fd = os.open(folder / f"{PREFIX}{slot}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return slot, fd
    raise AssertionError("unreachable: count() never ends")


def position(path: Path) -> str | None:
    """The cursor of the last whole ``seen`` line of a slot's journal (None: none yet)."""
    if not path.exists():
        return None
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - TAIL_BYTES))
        data = handle.read()
    if size > TAIL_BYTES and data.count(b"\n") < 2:  # one line longer than the tail read
        data = path.read_bytes()
    # A line cut short by a kill (no newline) is not counted; nor is the first
    # of a tail read, which may have begun mid-line.
    lines = data.split(b"\n")[:-1]
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("k") == "seen":
            return str(record["cursor"])
    return None


def record(event: Event) -> dict[str, object]:
    """The fields of a ``seen`` line."""
    return {
        "cursor": event.cursor,
        "task": event.task_id,
        "to": event.to_status.value if event.to_status is not None else event.kind,
        "attempt": event.attempt,
        "lag": round(time.time() - event.at.timestamp(), 4),
    }


def follow(url: str, folder: Path) -> None:
    """Claim a slot, resume after its last journaled cursor, and journal every
    event from there on, until SIGTERM."""
    slot, _lock = claim(folder)
    path = journal_path(folder, slot)
    after = position(path)
    journal = Journal(path)
    journal.write("resume", slot=slot, pid=os.getpid(), after=after)
    with _opened(url) as store:
        for event in Events(lambda: store).follow(after):
            journal.write("seen", slot=slot, **record(event))


def _opened(url: str) -> Store:
    """The store at ``url``, waiting up to :data:`OPEN_PATIENCE` seconds for
    a server that is down (a follower may start while it restarts)."""
    deadline = time.monotonic() + OPEN_PATIENCE
    while True:
        try:
            return open_store(url)
        except StoreUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(OPEN_PAUSE)  # a back-off between connection attempts


def catch_up(harness: Harness, timeout: float) -> bool:
    """Wait until every live follower has begun and every slot has journaled
    the newest event of the log (after the drain: nothing new comes); False
    after ``timeout``."""
    folder, slots = harness.setup.journals, harness.setup.processes.followers
    tail, resumed = Tail(folder, prefix=PREFIX), set[object]()

    def caught_up() -> bool:
        resumed.update(r.get("pid") for r in tail.read() if r["k"] == "resume")
        if not set(harness.alive("follower")) <= resumed:
            return False  # one started in a killed one's place has not begun yet
        try:
            newest = harness.store.event_tail(limit=1)
        except TenureError:
            return False
        head = newest[0].cursor if newest else None
        return all(position(journal_path(folder, slot)) == head for slot in range(slots))

    return harness.wait_for(caught_up, "every follower caught up", timeout, fail=False)


def _stop(_signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _stop)
    folder = os.environ.get(FOLDER_VARIABLE)
    if len(argv) != 1 or not folder:
        print(f"usage: ${FOLDER_VARIABLE}=FOLDER python -m chaos.follower URL", file=sys.stderr)
        return 2
    follow(argv[0], Path(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
