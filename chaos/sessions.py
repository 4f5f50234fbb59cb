"""tenure's sessions on a scenario's PostgreSQL database, and how the
connection-kills scenario ends them.

Every connection tenure opens names itself ``tenure-<role>`` in
``pg_stat_activity`` (``tenure-worker``, ``tenure-scheduler-listener``,
``tenure-app`` for the producers …). The name says what a process is for, not
which process it is, so each session is traced to its process by the port it
connects from: the harness's processes'
sockets, read from ``/proc``, say which pid owns which local port. Only
sessions of the scenario's own database and of its own processes are ever
terminated.

:func:`summary` reads the terminations back from a run's fault log, for its
figure line.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.journal import read_folder
from tenure.store.sqlfile import load_queries

PREFIX = "tenure-%"
"""The application names of tenure's sessions."""
Q = load_queries("chaos", "sessions.sql")
AT_COMMIT = ("idle in transaction", "idle in transaction (aborted)")
"""States of a session between its writes and its COMMIT."""


@dataclass(frozen=True, slots=True)
class Session:
    """One of tenure's sessions as ``pg_stat_activity`` shows it."""

    backend: int
    name: str
    state: str
    query: str
    port: int | None

    @property
    def in_transaction(self) -> bool:
        """Whether it is inside a transaction or running its COMMIT: a
        termination now ends it in doubt, or rolls it back."""
        return self.state in AT_COMMIT or (
            self.state == "active" and self.query.lstrip().upper().startswith("COMMIT")
        )


def sessions(conn: Any) -> list[Session]:
    """tenure's sessions on ``conn``'s database (a psycopg connection), but its own."""
    rows = conn.execute(Q["tenure_sessions"], {"prefix": PREFIX}).fetchall()
    return [Session(r[0], r[1], r[2] or "", r[3] or "", r[4]) for r in rows]


def terminate(conn: Any, backend: int) -> bool:
    """End backend ``backend`` if it is still one of tenure's sessions of this
    database; whether it was ended."""
    row = conn.execute(Q["terminate"], {"pid": backend, "prefix": PREFIX}).fetchone()
    return bool(row and row[0])


def ports(pids: list[int]) -> dict[int, int]:
    """Local TCP port → pid, for every socket the processes ``pids`` hold open."""
    by_inode: dict[int, int] = {}
    for pid in pids:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue  # exited meanwhile
        for link in links:
            if link.startswith("socket:["):
                by_inode[int(link[8:-1])] = pid
    found: dict[int, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            inode = int(fields[9])
            if inode in by_inode:
                found[int(fields[1].rsplit(":", 1)[1], 16)] = by_inode[inode]
    return found


def summary(journals: Path) -> Counter[str]:
    """How many sessions a run terminated: ``all``, and per role and per
    state (``role:worker``, ``state:idle in transaction`` …); and how many
    enqueues raised (``enq-error``)."""
    counts: Counter[str] = Counter()
    reading = read_folder(journals)
    counts["enq-error"] = sum(1 for _ in reading.of_kind("enq-error"))
    for record in reading.of_kind("terminate"):
        if record.get("ended"):
            counts["all"] += 1
            counts[f"role:{record.get('role')}"] += 1
            counts[f"state:{record.get('state')}"] += 1
    return counts
