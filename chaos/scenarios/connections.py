"""The connection-kills scenario (PostgreSQL; see :mod:`chaos.scenarios`).

While producers enqueue and workers drain, bursts of ``pg_terminate_backend``
end tenure's sessions on the scenario's database: for :data:`BURST` seconds the
harness looks at ``pg_stat_activity`` every few milliseconds and ends every
session of its workers, producers and scheduler that is running a statement or
sits inside a transaction (a write on its way to its COMMIT), and one idle
session of theirs at random. Each termination goes to the fault log
(``terminate``: backend, role, pid, state, query). After each burst the harness
waits until every worker listens again and has started a task again, and
writes down how long that took (``listening``: the R check's bound applies).

No invariant is relaxed: an ending whose write was cut off is written again
fenced by its lease, so one that had committed is refused and never applied
twice (I3, I6); an enqueue that raised is never journaled as returned, and one
that raised after its COMMIT leaves a task nobody acknowledged, which must
still finish (I1) and is neither lost nor a duplicate.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from chaos import ChaosError
from chaos.harness import Harness
from chaos.journal import monotonic
from chaos.scenarios.base import SHORT, Context, Plan, Scenario, tasks
from chaos.sessions import Session, ports, sessions, summary, terminate
from chaos.verdict import Figures

BURST = 0.6
"""Seconds each burst of terminations lasts."""
LOOK_EVERY = 0.003
"""Seconds between two looks at ``pg_stat_activity`` during a burst."""
PER_BURST = 6
"""Sessions ended at most in one burst."""
RECOVERY = 15.0
"""Seconds the harness waits for the workers after a burst (R's bound is 10)."""


def connection_kills(harness: Harness, context: Context) -> None:
    import psycopg  # noqa: PLC0415 - PostgreSQL only

    stop = harness.setup.folder / "stop-producers"
    producers = harness.produce(replace(w, until=str(stop)) for w in context.plan.workloads)
    producer_pids = [child.process.pid for child in producers]
    try:
        with psycopg.connect(harness.setup.url, autocommit=True, connect_timeout=5) as conn:
            for _ in range(context.plan.faults):
                context.interval()
                ended = _burst(harness, context, conn, producer_pids)
                _recovered(harness, conn, ended)
    finally:
        stop.touch()


def _roles(harness: Harness, producers: list[int]) -> dict[int, str]:
    roles = {pid: "producer" for pid in producers}
    roles.update((pid, "worker") for pid in harness.workers())
    leader = harness.leader()
    if leader is not None:
        roles[leader] = "scheduler"
    roles.pop(os.getpid(), None)  # never the harness's own sessions
    return roles


def _burst(harness: Harness, context: Context, conn: Any, producers: list[int]) -> float:
    """End sessions for :data:`BURST` seconds; when the burst ended (mono)."""
    ended: set[int] = set()
    deadline = monotonic() + BURST
    first = True
    while monotonic() < deadline and len(ended) < PER_BURST:
        roles = _roles(harness, producers)
        owners = ports(list(roles))
        ours = [s for s in sessions(conn) if owners.get(s.port or -1) in roles]
        busy = [s for s in ours if s.in_transaction or s.state == "active"]
        if first:  # an idle one too: its owner finds it dead on next use
            idle = [s for s in ours if s.state == "idle"]
            busy += [context.rng.choice(idle)] if idle else []
            first = False
        for session in busy:
            if session.backend not in ended and len(ended) < PER_BURST:
                pid = owners[session.port or -1]
                _end(harness, conn, session, pid, roles[pid])
                ended.add(session.backend)
        context.wait(LOOK_EVERY)
    return monotonic()


def _end(harness: Harness, conn: Any, session: Session, pid: int, role: str) -> None:
    fields = {"backend": session.backend, "pid": pid, "role": role, "name": session.name}
    fields |= {"state": session.state, "query": session.query[:60]}
    harness.faults.write("terminate", ended=terminate(conn, session.backend), **fields)


def _recovered(harness: Harness, conn: Any, since: float) -> None:
    """Wait until every live worker listens again and has started a task
    since ``since``; write down how long it took (None: not within RECOVERY)."""

    def back() -> bool:
        workers = set(harness.workers())
        owners = ports(list(workers))
        listening = {
            owners.get(s.port or -1)
            for s in sessions(conn)
            if s.name.endswith("-listener") and "tenure_tasks" in s.query
        }
        started = harness.started_since(since)
        idle = harness.producers_done() and harness.unfinished() == 0
        return workers <= listening and (idle or workers <= started)

    ok = harness.wait_for(back, "every worker back at work", RECOVERY, fail=False)
    harness.faults.write("listening", after=monotonic() - since if ok else None)
    if harness.setup.processes.workers and not harness.workers():
        raise ChaosError("no worker left alive after a burst of terminations")


CONNECTIONS = {  # producers go on until the last burst is over: counts are at most
    "full": Plan(
        workers=4,
        concurrency=4,
        workloads=tuple(tasks(100_000, s, durations=SHORT, rate=25, batch=5) for s in (41, 42)),
        faults=30,
        every=(2.0, 4.0),
    ),
    "quick": Plan(
        workers=3,
        concurrency=4,
        workloads=tuple(tasks(2000, s, durations=SHORT, rate=15, batch=5) for s in (41, 42)),
        faults=5,
        every=(1.0, 2.0),
        drain=120,
    ),
}


def figures(journals: Path, checked: Figures) -> str:
    """The scenario's own figures: sessions ended (by role, and how many in
    the middle of a statement or transaction), enqueues that raised, and tasks
    stored whose enqueue never returned; the first two while the run's
    journals are kept."""
    unacknowledged = checked.stored - checked.tasks
    if not journals.is_dir():
        return f" stored-unacknowledged {unacknowledged}"  # the journals were removed
    counts = summary(journals)
    roles = ",".join(
        f"{key.split(':', 1)[1]}:{n}"
        for key, n in sorted(counts.items())
        if key.startswith("role:")
    )
    busy = sum(n for key, n in counts.items() if key.startswith("state:") and key[6:] != "idle")
    return (
        f" terminated {counts['all']} ({roles or '-'}; {busy} mid-statement or transaction)"
        f" enqueue-errors {counts['enq-error']} stored-unacknowledged {unacknowledged}"
    )


SCENARIO = Scenario(
    "connection-kills", CONNECTIONS, connection_kills, stores=("postgres",), figures=figures
)
