"""What the checker reads, gathered once a scenario has drained: the journals
and the store, turned into executions, endings, lifetimes and histories.

- From the probes' journals, one :class:`Execution` per ``start`` record, with
  the ``end`` or ``abandon`` record of the same task and token, and every
  ``ack`` (an ending the store accepted, as told to the worker).
- From the producers' journals, each acknowledged task id and its priority.
- From the harness's fault log, each process's lifetime (:class:`Life`): when
  it was spawned, killed, paused and resumed, and the server's restarts.
- From the store, every task as it ended and every event of its log, in the
  order a follower sees them.
- From the event followers' journals (:mod:`chaos.follower`), per slot, each
  ``resume`` and each event delivered (``seen``), in the order they came.

Times in journals are CLOCK_MONOTONIC seconds (``mono``); the store's are its own
clock (``at``, and the ``store_at`` the harness read before each fault).
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import TypeVar

from chaos.journal import Reading, Record, read_folder
from tenure.store import Store
from tenure.store.types import Event
from tenure.task import Status, Task

T = TypeVar("T")


@dataclass(slots=True)
class Execution:
    """One attempt as a probe ran it: ``start`` to ``end`` (its body returned:
    ``outcome`` ok or raise) or to ``abandon`` (the worker cancelled it)."""

    task: str
    attempt: int
    token: int
    owner: str
    pid: int
    priority: int
    start: float
    end: float | None = None
    outcome: str | None = None


@dataclass(frozen=True, slots=True)
class Ack:
    """An ending the store accepted, as the worker's hook heard of it."""

    task: str
    attempt: int
    token: int
    kind: str
    pid: int
    mono: float


@dataclass(slots=True)
class Life:
    """One process of the harness, from its spawn to its kill (if it was killed),
    with its pauses as (SIGSTOP, SIGCONT) pairs (SIGCONT ``None``: never resumed)."""

    role: str
    pid: int
    spawned: float
    killed: float | None = None
    killed_store_at: float | None = None
    pauses: list[tuple[float, float | None, float | None]] = field(default_factory=list)
    """(SIGSTOP's mono, SIGCONT's mono, SIGSTOP's store_at)."""
    exited: int | None = None


@dataclass(frozen=True, slots=True)
class PoisonAttempt:
    """One attempt of a poison task, as it began (then it died, failed or hung)."""

    task: str
    attempt: int
    token: int
    kind: str
    pid: int


@dataclass(slots=True)
class Evidence:
    executions: dict[str, list[Execution]] = field(default_factory=dict)
    """Per task, sorted by token."""
    acks: list[Ack] = field(default_factory=list)
    enqueued: dict[str, int] = field(default_factory=dict)
    """Acknowledged task id → its priority at enqueue."""
    lives: list[Life] = field(default_factory=list)
    restarts: list[tuple[str, float, float | None]] = field(default_factory=list)
    """(mode, server-down mono, server-up mono)."""
    listening: list[float | None] = field(default_factory=list)
    """Per restart, seconds from server-up until every worker listened again."""
    tasks: dict[str, Task] = field(default_factory=dict)
    events: dict[str, list[Event]] = field(default_factory=dict)
    producer_codes: list[int] = field(default_factory=list)
    poison: dict[str, list[PoisonAttempt]] = field(default_factory=dict)
    """Per poison task, its attempts in journal order."""
    phases: list[tuple[str, float]] = field(default_factory=list)
    """(name, mono) of each phase the harness began."""
    elections: list[tuple[int, int | None, float]] = field(default_factory=list)
    """(the deposed leader's pid, the new leader's pid, when the harness saw it)."""
    log: list[str] = field(default_factory=list)
    """The cursor of every event of the store's log, in the log's order."""
    deliveries: dict[int, list[Record]] = field(default_factory=dict)
    """Per follower slot, its ``resume`` and ``seen`` records in journal order."""
    handed_back: set[tuple[str, int, int]] = field(default_factory=set)
    """(task, attempt, pid) of each reservation its worker handed back unrun,
    the answer having come after its lease."""
    drained: bool = False
    cut_short: int = 0
    unreadable: int = 0

    def life_of(self, pid: int, at: float) -> Life | None:
        """The process that had ``pid`` at monotonic time ``at`` (pids are reused)."""
        found = [life for life in self.lives if life.pid == pid and life.spawned <= at]
        return max(found, key=lambda life: life.spawned) if found else None


def gather(folder: Path, store: Store) -> Evidence:
    """Read the journals of ``folder`` and the whole of ``store``."""
    reading = read_folder(folder)
    evidence = Evidence(cut_short=reading.cut_short, unreadable=reading.unreadable)
    _executions(reading, evidence)
    _enqueued(reading, evidence)
    _faults(reading, evidence)
    _poisoned(reading, evidence)
    for r in reading.of_kind("resume", "seen"):
        evidence.deliveries.setdefault(r["slot"], []).append(r)
    for r in reading.of_kind("handback"):
        evidence.handed_back.add((str(r.get("task")), r.get("attempt") or 0, r.get("pid") or 0))
    evidence.tasks, evidence.events = read_store(store, evidence.log)
    return evidence


def _executions(reading: Reading, evidence: Evidence) -> None:
    runs: dict[tuple[str, int], Execution] = {}
    again: list[Execution] = []  # a second start under one token (I4 names it)
    for r in reading.of_kind("start"):
        run = _made(
            evidence, Execution, r, "task", "attempt", "token", "owner", "pid", "priority", "mono"
        )
        if run is None:
            continue
        if (run.task, run.token) in runs:
            again.append(run)
        else:
            runs[(run.task, run.token)] = run
    for r in reading.of_kind("end", "abandon"):
        ended = runs.get((str(r.get("task")), r.get("token") or 0))
        if ended is not None and ended.end is None:
            ended.end, ended.outcome = r["mono"], r.get("outcome", "abandon")
    per_task: dict[str, list[Execution]] = defaultdict(list)
    for run in [*runs.values(), *again]:
        per_task[run.task].append(run)
    for task_id, found in per_task.items():
        evidence.executions[task_id] = sorted(found, key=lambda r: (r.token, r.start))
    for r in reading.of_kind("ack"):
        ack = _made(evidence, Ack, r, "task", "attempt", "token", "kind", "pid", "mono")
        if ack is not None:
            evidence.acks.append(ack)


def _poisoned(reading: Reading, evidence: Evidence) -> None:
    for r in reading.of_kind("poison"):
        attempt = _made(evidence, PoisonAttempt, r, "task", "attempt", "token", "kind", "pid")
        if attempt is not None:
            evidence.poison.setdefault(attempt.task, []).append(attempt)
    for r in sorted(reading.of_kind("phase"), key=lambda r: float(r["mono"])):
        evidence.phases.append((r["name"], r["mono"]))
    for r in reading.of_kind("elected"):
        evidence.elections.append((r["after"], r.get("pid"), r["mono"]))


def _made(evidence: Evidence, kind: type[T], record: Record, *names: str) -> T | None:
    """``kind`` built from the record's fields ``names``; a record without
    them counts as unreadable (it was tampered with)."""
    try:
        return kind(*(record[name] for name in names))
    except KeyError:
        evidence.unreadable += 1
        return None


def _enqueued(reading: Reading, evidence: Evidence) -> None:
    for r in reading.of_kind("enq"):
        for task_id in r["ids"]:
            evidence.enqueued[task_id] = r["priority"]


def _faults(reading: Reading, evidence: Evidence) -> None:
    lives: dict[int, Life] = {}  # the latest life of each pid
    down: float | None = None
    mode = ""
    for r in sorted(reading.of_kind(*FAULT_KINDS), key=lambda r: float(r["mono"])):
        kind = r["k"]
        if kind == "spawn":
            lives[r["pid"]] = Life(r["role"], r["pid"], r["mono"])
            evidence.lives.append(lives[r["pid"]])
        elif kind == "server-down":
            down, mode = r["mono"], r["mode"]
        elif kind == "server-up":
            evidence.restarts.append((mode, down if down is not None else r["mono"], r["mono"]))
            down = None
        elif kind == "listening":
            evidence.listening.append(r.get("after"))
        elif kind == "producer-exit":
            evidence.producer_codes.append(r["code"])
        elif kind == "drained":
            evidence.drained = bool(r["ok"])

        elif r["pid"] in lives:
            _fault(lives[r["pid"]], r)
    if down is not None:
        evidence.restarts.append((mode, down, None))


FAULT_KINDS = (
    "spawn",
    "kill",
    "stop",
    "cont",
    "exit",
    "server-down",
    "server-up",
    "listening",
    "producer-exit",
    "drained",
)


def _fault(life: Life, r: Record) -> None:
    kind = r["k"]
    if kind == "kill":
        life.killed, life.killed_store_at = r["mono"], r.get("store_at")
    elif kind == "stop":
        life.pauses.append((r["mono"], None, r.get("store_at")))
    elif kind == "cont" and life.pauses and life.pauses[-1][1] is None:
        stop, _, store_at = life.pauses[-1]
        life.pauses[-1] = (stop, r["mono"], store_at)
    elif kind == "exit":
        life.exited = r["code"]


def read_store(
    store: Store, log: list[str] | None = None
) -> tuple[dict[str, Task], dict[str, list[Event]]]:
    """Every task, and every event grouped by task in the log's order (and
    every event's cursor appended to ``log``, reports too)."""
    tasks: dict[str, Task] = {}
    cursor: str | None = None
    while True:
        page = store.task_list(cursor=cursor, limit=1000)
        tasks.update((task.id, task) for task in page.tasks)
        if page.cursor is None:
            break
        cursor = page.cursor
    events: dict[str, list[Event]] = defaultdict(list)
    after: str | None = None
    waits = 0
    while True:
        read = store.event_page(after=after, limit=1000)
        for event in read.events:
            if log is not None:
                log.append(event.cursor)
            if event.task_id:  # reports have none
                events[event.task_id].append(event)
        if read.events:
            after = read.events[-1].cursor
        elif not read.held_back or waits > HELD_BACK_WAITS:
            break
        else:  # a transaction still open on the server: its events come once it ends
            waits += 1
            time.sleep(0.05)
    return tasks, dict(events)


HELD_BACK_WAITS = 200


def owner_pid(owner: str | None) -> int | None:
    """The pid in a lease owner's name (``host:pid:random``)."""
    parts = (owner or "").rsplit(":", 2)
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def reservations(events: list[Event]) -> list[Event]:
    """The events of a task (in the log's order) that granted a lease: into
    running, except the starts a unique rule settled at once (see :func:`settled`)."""
    unleased = set(settled(events))
    return [e for i, e in enumerate(events) if e.to_status is Status.RUNNING and i not in unleased]


def settled(events: list[Event]) -> list[int]:
    """Indexes of the starts a unique task's lock settled (a conflict found as
    it started): written as a transition into running followed, at the same
    instant and by the same owner, by one out of it; no lease was handed out."""
    return [
        i
        for i, (start, after) in enumerate(pairwise(events))
        if start.to_status is Status.RUNNING
        and after.from_status is Status.RUNNING
        and after.at == start.at
        and after.owner == start.owner
    ]


def as_seconds(event: Event) -> float:
    return event.at.timestamp()
