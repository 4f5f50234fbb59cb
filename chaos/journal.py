"""Append-only journals: what each process of a scenario saw, in lines that
survive its SIGKILL.

Every process (a worker's probe task, a producer, the harness) writes its own
file in the scenario's journal folder, opened with ``O_APPEND``. A record is one
JSON object on one line, written by a single ``os.write``: the kernel appends
it whole, so a process killed at any instant leaves whole lines and at most a
missing last one, never a line of another process inside its own. Each record
carries ``mono``, the CLOCK_MONOTONIC reading when it was written: one clock
for every process of the machine, which never jumps, so the checker compares
times across processes without trusting any wall clock.

The folder comes to child processes in ``$TENURE_CHAOS_JOURNALS``.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FOLDER_VARIABLE = "TENURE_CHAOS_JOURNALS"
"""Where the processes of a scenario write their journals."""
SUFFIX = ".jsonl"

Record = dict[str, Any]
"""One journal line: ``k`` (its kind), ``mono`` and the kind's own fields."""


def monotonic() -> float:
    """CLOCK_MONOTONIC, the machine-wide clock every record is stamped with."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


class Journal:
    """One process's journal file. Thread-safe: each record is one system call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, kind: str, /, **fields: Any) -> Record:
        """Append one record, stamped now; returns it."""
        record: Record = {"k": kind, "mono": monotonic(), **fields}
        line = json.dumps(record, separators=(",", ":")) + "\n"
        os.write(self._fd, line.encode())
        return record

    def close(self) -> None:
        os.close(self._fd)


_lock = threading.Lock()
_opened: dict[tuple[int, str], Journal] = {}


def of_process(role: str, folder: str | None = None) -> Journal:
    """This process's journal for ``role`` (``probe``, ``producer`` …), opened on
    first use in ``folder`` or ``$TENURE_CHAOS_JOURNALS``. The name holds the
    pid and a random part, so a reused pid never shares a file."""
    key = (os.getpid(), role)
    with _lock:
        journal = _opened.get(key)
        if journal is None:
            where = folder or os.environ.get(FOLDER_VARIABLE)
            if not where:
                raise RuntimeError(f"${FOLDER_VARIABLE} is not set: no folder for journals")
            name = f"{role}-{os.getpid()}-{secrets.token_hex(3)}{SUFFIX}"
            journal = _opened[key] = Journal(Path(where) / name)
        return journal


@dataclass(slots=True)
class Reading:
    """Every whole record of a folder's journals, and how many lines were not
    whole (a process killed mid-write leaves at most one per file; a line
    that does not parse in the middle of a file means it was tampered with)."""

    records: list[Record] = field(default_factory=list)
    cut_short: int = 0
    unreadable: int = 0

    def of_kind(self, *kinds: str) -> Iterator[Record]:
        return (r for r in self.records if r.get("k") in kinds)


def read_folder(folder: Path) -> Reading:
    """All records of every journal in ``folder``, file by file, in file order."""
    reading = Reading()
    for path in sorted(folder.glob(f"*{SUFFIX}")):
        _parse(path.read_bytes(), reading)
    return reading


def _parse(data: bytes, reading: Reading) -> None:
    lines = data.split(b"\n")
    if lines and lines[-1]:
        reading.cut_short += 1  # the last line never got its newline
    for line in lines[:-1]:
        if not line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            reading.unreadable += 1
            continue
        if isinstance(record, dict) and isinstance(record.get("k"), str):
            reading.records.append(record)
        else:
            reading.unreadable += 1


class Tail:
    """Follows a folder's journals while they grow: each :meth:`read` returns
    the whole records appended since the last one (a harness watching its
    workers live)."""

    def __init__(self, folder: Path, prefix: str = "") -> None:
        self.folder = folder
        self.prefix = prefix
        self._offsets: dict[Path, int] = {}

    def read(self) -> list[Record]:
        found = Reading()
        for path in sorted(self.folder.glob(f"{self.prefix}*{SUFFIX}")):
            start = self._offsets.get(path, 0)
            with path.open("rb") as handle:
                handle.seek(start)
                data = handle.read()
            whole = data.rfind(b"\n") + 1  # a line still being written waits
            if whole:
                self._offsets[path] = start + whole
                _parse(data[:whole], found)
        return found.records
