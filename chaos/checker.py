"""The offline checker: after the drain, the journals and the store against
tenure's promise, one invariant at a time (see :mod:`chaos.evidence` for what
is read). Each violation names its invariant, its task and what was seen.

Each invariant is a :class:`~chaos.verdict.Check` of its own, which answers
with its own result: one that raises reads ``unknown`` and the others still
count (:func:`~chaos.verdict.compose`). A code names one check: the table
below, and :data:`CORE` and each ``CHECKS`` of the modules it names.

- **I1** every task in the store is done, failed or cancelled; the drain ended
  before its deadline; every execution (probe ``start``) has an ``end`` or
  ``abandon``, unless its process was killed.
- **I2** durability: every id a producer journaled as returned is in the store;
  every ``ack`` (an ending the store accepted) is in the event log as that
  attempt's transition (done, pending again, failed); no execution ran a task
  the store does not have. Each miss counts as ``lost``.
- **I3** exactly one accepted ending per done task: one transition into done in
  the event log, at most one ``ack`` of success and with the task's final lease
  token, and an execution under that token whose body ran to its ``end``.
- **I4** attempts: the store's count never exceeds ``max_attempts``; every
  execution matches a reservation in the event log (same attempt and owner),
  each token runs at most once, and every reservation without an execution
  belongs to an owner that was killed or paused after it (or a server restart),
  or that handed it back unrun (answered after its lease: the worker's
  warning, journaled as ``handback``), whether its release came before the
  supervisor's revoke or after.
- **I5** two executions of one task overlap only while the older one's process
  was paused (until SIGCONT and one keepalive interval more) or dead, never
  while both could keep their leases alive (to within ``slack``).
- **I6** no accepted write carries an older token than one already accepted:
  no ``ack`` for a token once a newer token of the task had started before the
  older execution ended, and a done task's final token is the newest started.
- **I7** priority never rises: at each reservation (probe ``start``) it is at
  most the enqueued one and the previous attempt's; the store's final one too.
- **I8** after its owner is killed or paused, a task stays running at most
  lease + supervisor cycle + poll (+ ``margin`` for a loaded machine), measured
  on the store's clock from the fault to the task's next transition.
- **Z** an owner paused past its lease ends each execution it was running
  within one keepalive interval after SIGCONT, and none of their endings is
  accepted.
- **R** after each server restart, every live worker starts a task again, and
  every worker listens again, within ``server_recovery`` seconds.
- **P** no process exited without being killed; producers finished.
- **J** every journal line parses (one that does not was tampered with).
- The ``figures`` check counts what the run did (tasks, faults, duplicates).
- **D** and **T** (:mod:`chaos.checks.poison`): poison tasks stop at their maximum
  attempts, every death counted; healthy tasks keep their pace beside them.
- **S** and **E** (:mod:`chaos.checks.election`): every periodic slot enqueued
  exactly once across scheduler failovers; failover within leader lease + one
  cycle.
- **F** and **G** (:mod:`chaos.checks.follower`): every event of the log delivered
  to every event follower, in order, with no gap or duplicate across the
  followers' kills and the server's restarts.
- **I9** (:mod:`chaos.checks.reruns`): after a kill under skewed clocks
  (:mod:`chaos.skew`), or a worker's host cut off, its executions run again
  elsewhere within I8's bound, measured on the monotonic clock.
- **N** (:mod:`chaos.checks.partition`): no write of a cut-off worker accepted for a
  task run elsewhere, and it resumes work by itself.
- **L1** to **L4** (:mod:`chaos.checks.unique`): never two holders of a unique
  task's lock; nothing of a rolled-back enqueue stored; each conflict strategy
  as documented; no lock outlives its task.
"""

from __future__ import annotations

__all__ = ["CORE", "EVERY", "Bounds", "Figures", "Verdict", "Violation", "check"]

import math
from collections import defaultdict
from collections.abc import Iterable
from itertools import pairwise

from chaos.checks import election, follower, partition, poison, reruns, skew, unique
from chaos.checks.poison import poison_tasks
from chaos.evidence import Ack, Evidence, Execution, Life, as_seconds, owner_pid, reservations
from chaos.verdict import Bounds, Check, Figures, Result, Verdict, Violation, compose
from tenure.task import Status

STORE_SLACK = 1.0
"""Seconds between the harness reading the store's clock and its signal landing."""
ENDED_AS = {"succeeded": Status.DONE, "retrying": Status.PENDING, "failed": Status.FAILED}


def check(evidence: Evidence, bounds: Bounds, checks: Iterable[Check] | None = None) -> Verdict:
    """Every check of ``checks`` (default: :data:`EVERY`) over ``evidence``,
    each on its own: the run's verdict and figures."""
    return compose(EVERY if checks is None else checks, evidence, bounds)


def _i1(ev: Evidence, _: Bounds, out: Result) -> None:
    if not ev.drained:
        out.add("I1", None, "the queue did not drain before the deadline")
    for task in ev.tasks.values():
        if not task.finished:
            out.add("I1", task.id, f"still {task.status} after the drain (attempt {task.attempts})")
    for run in _all(ev):
        life = ev.life_of(run.pid, run.start)
        if run.end is not None or _given_up(ev, run):
            continue
        if life is None or (life.killed is None and life.exited is None):
            out.add("I1", run.task, f"token {run.token} on pid {run.pid} never ended, unkilled")


def _given_up(ev: Evidence, run: Execution) -> bool:
    """Whether ``run`` ran in a pool child (not its worker's own process) that
    its worker killed on losing the lease: a newer token of the task started
    after it. Such a child writes no ``abandon``."""
    if run.pid == owner_pid(run.owner):
        return False
    return any(r.token > run.token and r.start > run.start for r in ev.executions.get(run.task, []))


def _i2(ev: Evidence, _: Bounds, out: Result) -> None:
    for task_id in ev.enqueued.keys() - ev.tasks.keys():
        out.add("I2", task_id, "its enqueue returned, but the store has no such task")
        out.figures.lost += 1
    for ack in ev.acks:
        wanted = ENDED_AS.get(ack.kind)
        if not any(
            e.from_status is Status.RUNNING and e.to_status is wanted and e.attempt == ack.attempt
            for e in ev.events.get(ack.task, [])
        ):
            out.add(
                "I2",
                ack.task,
                f"ending {ack.kind} of attempt {ack.attempt} was acknowledged "
                f"to pid {ack.pid}, and the store has no such transition",
            )
            out.figures.lost += 1
    for task_id in ev.executions.keys() - ev.tasks.keys():
        out.add("I2", task_id, "executed, but the store has no such task")


def _i3(ev: Evidence, _: Bounds, out: Result) -> None:
    successes = _acks_by_task(ev, "succeeded")
    for task in ev.tasks.values():
        done = sum(1 for e in ev.events.get(task.id, []) if e.to_status is Status.DONE)
        acked = successes.get(task.id, [])
        if done > 1 or len(acked) > 1:
            out.add(
                "I3",
                task.id,
                f"{max(done, len(acked))} accepted endings "
                f"({done} in the store, {len(acked)} told to workers)",
            )
            out.figures.dup_endings += 1
        if task.status is not Status.DONE:
            if done:
                out.add("I3", task.id, f"{task.status}, after a transition into done")
            continue
        if done == 0:
            out.add("I3", task.id, "done, with no transition into done in the event log")
        runs = ev.executions.get(task.id, [])
        if not any(r.token == task.lease_token and r.outcome == "ok" for r in runs):
            out.add(
                "I3",
                task.id,
                f"done, but no execution under its final token {task.lease_token} ran to its end",
            )
        for ack in acked:
            if ack.token != task.lease_token:
                out.add(
                    "I3",
                    task.id,
                    f"success accepted for token {ack.token}, but the "
                    f"task ended under token {task.lease_token}",
                )


def _i4(ev: Evidence, _: Bounds, out: Result) -> None:
    poisoned = poison_tasks(ev)  # no probe runs them: their own journal tells
    for task in ev.tasks.values():
        if task.attempts > task.max_attempts:
            out.add("I4", task.id, f"{task.attempts} attempts of at most {task.max_attempts}")
        if task.id in poisoned:
            _poison_never_begun(ev, task.id, task.max_attempts, out)
            continue
        runs = ev.executions.get(task.id, [])
        granted = reservations(ev.events.get(task.id, []))
        for earlier, later in pairwise(runs):
            if earlier.token == later.token:
                out.add("I4", task.id, f"token {later.token} executed twice")
        for run in runs:
            if not any(e.attempt == run.attempt and e.owner == run.owner for e in granted):
                out.add(
                    "I4",
                    task.id,
                    f"attempt {run.attempt} ran on {run.owner}, which the store never granted it",
                )
        started = {(run.attempt, run.owner) for run in runs}
        for event in granted:
            if (
                (event.attempt, event.owner) not in started
                and not _lost_to_a_fault(ev, event.owner, as_seconds(event))
                and (task.id, event.attempt, owner_pid(event.owner)) not in ev.handed_back
            ):
                out.add(
                    "I4",
                    task.id,
                    f"attempt {event.attempt} was granted to {event.owner} "
                    "and never started, with no fault to explain it",
                )


def _poison_never_begun(ev: Evidence, task_id: str, most: int, out: Result) -> None:
    """Each attempt of a poison task granted and never begun (lost before its
    body ran), when its journal is otherwise sound (else D names it)."""
    wanted = set(range(1, most + 1))
    begun = [a.attempt for a in ev.poison.get(task_id, [])]
    if len(set(begun)) == len(begun) and set(begun) <= wanted:
        for attempt in sorted(wanted - set(begun)):
            out.add("I4", task_id, f"attempt {attempt} was granted and never started")


def _lost_to_a_fault(ev: Evidence, owner: str | None, at: float) -> bool:
    """Whether the owner of a reservation at store time ``at`` was killed or
    paused after it, exited, or the server restarted."""
    if ev.restarts:
        return True
    pid = owner_pid(owner)
    for life in ev.lives:
        if life.pid != pid:
            continue
        moments = [life.killed_store_at] if life.killed is not None else []
        moments += [store_at for _, _, store_at in life.pauses]
        if life.exited is not None or any(m is None or m + STORE_SLACK >= at for m in moments):
            return True
    return False


def _i5(ev: Evidence, bounds: Bounds, out: Result) -> None:
    for task_id, runs in ev.executions.items():
        for index, older in enumerate(runs):
            life = ev.life_of(older.pid, older.start)
            silent = _silent(life, bounds.keepalive)
            for newer in runs[index + 1 :]:
                if newer.token <= older.token:
                    continue
                low, high = newer.start, min(_end(ev, older), _end(ev, newer))
                if high <= low:
                    continue
                both = _uncovered(low, high, silent)
                if both > bounds.slack:
                    out.add(
                        "I5",
                        task_id,
                        f"tokens {older.token} (pid {older.pid}) and "
                        f"{newer.token} (pid {newer.pid}) ran together for {both:.2f}s while "
                        "the older one was neither paused nor dead",
                    )


def _silent(life: Life | None, keepalive: float) -> list[tuple[float, float]]:
    """When a process could not hold a lease: paused (and one keepalive interval
    after SIGCONT, to notice), or dead."""
    if life is None:
        return []
    windows = [(stop, (cont or math.inf) + keepalive) for stop, cont, _ in life.pauses]
    if life.killed is not None:
        windows.append((life.killed, math.inf))
    return windows


def _uncovered(low: float, high: float, windows: Iterable[tuple[float, float]]) -> float:
    """The length of [low, high] outside every window."""
    covered, reach = 0.0, low
    for opens, closes in sorted(windows):
        start, end = max(opens, reach), min(closes, high)
        if end > start:
            covered += end - start
            reach = end
    return (high - low) - covered


def _end(ev: Evidence, run: Execution) -> float:
    if run.end is not None:
        return run.end
    life = ev.life_of(run.pid, run.start)
    return life.killed if life is not None and life.killed is not None else math.inf


def _i6(ev: Evidence, _: Bounds, out: Result) -> None:
    for ack in ev.acks:
        runs = ev.executions.get(ack.task, [])
        mine = next((r for r in runs if r.token == ack.token), None)
        produced = mine.end if mine is not None and mine.end is not None else ack.mono
        for newer in runs:
            if newer.token > ack.token and newer.start < produced:
                out.add(
                    "I6",
                    ack.task,
                    f"ending of token {ack.token} accepted after token "
                    f"{newer.token} had started ({produced - newer.start:.2f}s before it)",
                )
    for task in ev.tasks.values():
        runs = ev.executions.get(task.id, [])
        if (
            task.status is Status.DONE
            and runs
            and max(r.token for r in runs) > (task.lease_token or 0)
        ):
            out.add("I6", task.id, f"done under token {task.lease_token}, older than one started")


def _i7(ev: Evidence, _: Bounds, out: Result) -> None:
    for task in ev.tasks.values():
        # An enqueue in doubt (it raised, yet committed) has no priority on
        # record: its first reservation's is the ceiling, never its final one.
        ceiling = ev.enqueued.get(task.id, math.inf)
        for run in ev.executions.get(task.id, []):
            if run.priority > ceiling:
                out.add(
                    "I7",
                    task.id,
                    f"priority rose from {ceiling} to {run.priority} at attempt {run.attempt}",
                )
            ceiling = min(ceiling, run.priority)
        if task.priority > ceiling:
            out.add("I7", task.id, f"priority rose from {ceiling} to {task.priority} in the store")


def _i8(ev: Evidence, bounds: Bounds, out: Result) -> None:
    held_by: dict[int | None, set[str]] = defaultdict(set)
    for task_id, events in ev.events.items():
        for event in reservations(events):
            held_by[owner_pid(event.owner)].add(task_id)
    for pid, at in _silenced(ev, bounds):
        for task_id in sorted(held_by[pid]):
            events = ev.events[task_id]
            last = max((i for i, e in enumerate(events) if as_seconds(e) <= at), default=None)
            if last is None or events[last].to_status is not Status.RUNNING:
                continue
            if owner_pid(events[last].owner) != pid:
                continue
            if last + 1 == len(events):
                out.add("I8", task_id, f"still running, its owner pid {pid} gone")
                continue
            took = as_seconds(events[last + 1]) - at
            out.figures.recovery.append(took)
            if took > bounds.recovery:
                out.add(
                    "I8",
                    task_id,
                    f"running {took:.2f}s after its owner pid {pid} went "
                    f"silent (bound {bounds.recovery:.2f}s)",
                )


def _silenced(ev: Evidence, bounds: Bounds) -> list[tuple[int, float]]:
    """(pid, store time) of each kill, and of each pause that outlasted a lease."""
    found = [(life.pid, life.killed_store_at) for life in ev.lives if life.killed is not None]
    for life in ev.lives:
        for stop, cont, store_at in life.pauses:
            if cont is None or cont - stop > bounds.lease + bounds.keepalive:
                found.append((life.pid, store_at))
    return [(pid, at) for pid, at in found if at is not None]


def _zombies(ev: Evidence, bounds: Bounds, out: Result) -> None:
    tokens_acked = {(a.task, a.token) for a in ev.acks}
    for run in _all(ev):
        life = ev.life_of(run.pid, run.start)
        for stop, cont, _ in life.pauses if life is not None else []:
            if cont is None or cont - stop <= bounds.lease + bounds.keepalive:
                continue
            if not (run.start < stop and (run.end is None or run.end > stop)):
                continue
            went_on = (run.end if run.end is not None else math.inf) - cont
            out.figures.abandon.append(went_on)
            if went_on > bounds.keepalive:
                out.add(
                    "Z",
                    run.task,
                    f"token {run.token} went on {went_on:.2f}s after SIGCONT "
                    f"(bound: one keepalive interval, {bounds.keepalive:.2f}s)",
                )
            if (run.task, run.token) in tokens_acked:
                out.add(
                    "Z",
                    run.task,
                    f"an ending of token {run.token}, paused past its lease, was accepted",
                )


def _servers(ev: Evidence, bounds: Bounds, out: Result) -> None:
    starts: dict[int, list[float]] = defaultdict(list)
    for run in _all(ev):
        starts[run.pid].append(run.start)
    within = bounds.server_recovery
    for mode, _, up in ev.restarts:
        if up is None:
            out.add("R", None, f"the server never came back after restart -m {mode}")
            continue
        for life in ev.lives:
            gone = life.killed if life.killed is not None else math.inf
            if life.role != "worker" or life.spawned > up or gone < up + within or life.pauses:
                continue
            first = min((s for s in starts[life.pid] if s >= up), default=math.inf)
            out.figures.worker_recovery.append(first - up)
            if first - up > within:
                out.add(
                    "R",
                    None,
                    f"worker pid {life.pid} started no task within {within:g}s "
                    f"of the server's return (restart -m {mode})",
                )
    for after in ev.listening:
        if after is None or after > within:
            out.add("R", None, f"the workers did not all listen again within {within:g}s")
        out.figures.listen.append(math.inf if after is None else after)


def _processes(ev: Evidence, _: Bounds, out: Result) -> None:
    for life in ev.lives:
        if life.exited is not None:
            out.add("P", None, f"{life.role} pid {life.pid} exited by itself ({life.exited})")
    for code in ev.producer_codes:
        if code != 0:
            out.add("P", None, f"a producer failed (exit code {code})")


def _journals(ev: Evidence, _: Bounds, out: Result) -> None:
    if ev.unreadable:
        out.add("J", None, f"{ev.unreadable} journal lines do not parse")


def _figures(ev: Evidence, _: Bounds, out: Result) -> None:
    figures = out.figures
    figures.tasks = len(ev.enqueued)
    figures.stored = len(ev.tasks)
    figures.kills = sum(
        1 for life in ev.lives if life.killed is not None and life.role != "follower"
    )
    figures.pauses = sum(len(life.pauses) for life in ev.lives)
    figures.restarts = len(ev.restarts)
    for runs in ev.executions.values():
        figures.dup_executions += sum(1 for prev, _ in pairwise(runs) if prev.outcome != "raise")
    for run in _all(ev):
        life = ev.life_of(run.pid, run.start)
        if run.end is None and life is not None and life.killed is not None:
            figures.in_flight_at_kill += 1
        figures.abandoned += run.outcome == "abandon"


def _all(ev: Evidence) -> Iterable[Execution]:
    return (run for runs in ev.executions.values() for run in runs)


def _acks_by_task(ev: Evidence, kind: str) -> dict[str, list[Ack]]:
    found: dict[str, list[Ack]] = defaultdict(list)
    for ack in ev.acks:
        if ack.kind == kind:
            found[ack.task].append(ack)
    return found


CORE = (
    Check("finished", ("I1",), _i1),
    Check("durable", ("I2",), _i2),
    Check("one-ending", ("I3",), _i3),
    Check("attempts", ("I4",), _i4),
    Check("no-overlap", ("I5",), _i5),
    Check("fenced", ("I6",), _i6),
    Check("priority", ("I7",), _i7),
    Check("recovery", ("I8",), _i8),
    Check("zombies", ("Z",), _zombies),
    Check("servers", ("R",), _servers),
    Check("processes", ("P",), _processes),
    Check("journals", ("J",), _journals),
    Check("figures", (), _figures),
)
"""The checks of every scenario: tenure's promise, whatever the faults."""
EVERY = (
    *CORE,
    *poison.CHECKS,
    *election.CHECKS,
    *follower.CHECKS,
    *reruns.CHECKS,
    *skew.CHECKS,
    *partition.CHECKS,
    *unique.CHECKS,
)
"""Every check there is, the core's and those kept beside their scenarios."""
