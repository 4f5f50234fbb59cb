"""Wall clocks moved on purpose, for the clock-skew scenario, and its checks
(part of :func:`chaos.checker.check`).

A skewed process runs with libfaketime preloaded into the process itself
(``LD_PRELOAD``; never the ``faketime`` wrapper, which forks, so the harness's
signals would reach the wrapper and not the worker), its monotonic clock left
real (``FAKETIME_DONT_FAKE_MONOTONIC``), and its offset read from a file of its
own (``FAKETIME_TIMESTAMP_FILE``) at most a second old
(``FAKETIME_CACHE_DURATION``): rewriting the file moves the clock of the running
process, a jump, and of every process started again in its place. Python's
``time.sleep`` fails under libfaketime with a real monotonic clock; the shim of
``tests/faketime_shim`` replaces it (on ``PYTHONPATH``).

Each change of a clock is a ``phase`` of the fault log named ``clock WHO
OFFSET`` (e.g. ``clock worker-0 -2h``): the figures list them.

- **I8**, on the monotonic clock: every execution in flight on a worker when it
  was killed runs again, under a newer token, within lease + supervisor cycle +
  poll (+ margin) of the kill, unless its task had used up its attempts (or
  the next owner it was given was lost before it began, which I4 judges). The
  store's own times cannot measure this under skew on SQLite, where each
  process writes its own wall clock into the event log (the scenario's kills
  carry no store time there, so the checker's store-clock I8 leaves them out);
  on PostgreSQL both measures apply. On SQLite a retry's delay is written by
  the clock of the worker that failed the attempt before: a task taken back
  from such a retry waits until some worker's clock reaches it (tenure's
  documented SQLite behaviour), so those are left out of this measure there
  (I1 still holds them to finishing).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

from chaos import ROOT, CannotRunHere
from chaos.evidence import Evidence, Execution, owner_pid, reservations
from chaos.harness import Placement
from tenure.task import Status

if TYPE_CHECKING:
    from chaos.verdict import Bounds, Verdict

LIBRARY = next(
    iter(sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))),
    Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"),
)
"""Debian's libfaketime, wherever the machine's multiarch folder is."""
SHIM = ROOT / "tests" / "faketime_shim"
CLOCK = "clock "
"""The prefix of the fault log's phases that change a clock."""


class FaketimeUnavailable(CannotRunHere):
    """libfaketime is not installed; the message says which package brings it."""


class Clocks:
    """The clocks of a scenario's skewed processes: one offset file per name, in
    ``folder``."""

    def __init__(self, folder: Path) -> None:
        if not LIBRARY.exists():
            raise FaketimeUnavailable(
                f"libfaketime not found ({LIBRARY}): apt-get install libfaketime"
            )
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def place(self, name: str, offset: str) -> Placement:
        """Where a process whose clock ``name`` starts ``offset`` (``-2h``) off runs."""
        self.move(name, offset)
        path = os.pathsep.join(filter(None, [str(SHIM), str(ROOT), os.environ.get("PYTHONPATH")]))
        env = {
            "LD_PRELOAD": str(LIBRARY),
            "FAKETIME_TIMESTAMP_FILE": str(self._file(name)),
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "FAKETIME_CACHE_DURATION": "1",
            "PYTHONPATH": path,
        }
        return Placement(env=tuple(env.items()))

    def move(self, name: str, offset: str) -> None:
        """Set clock ``name`` to ``offset``: running processes see it within a second."""
        staged = self._file(name).with_suffix(".new")
        staged.write_text(offset + "\n")
        staged.replace(self._file(name))  # a reader never sees a half-written file

    def _file(self, name: str) -> Path:
        return self.folder / f"{name}.faketime"


def skewed(pid: int) -> bool:
    """Whether process ``pid`` has libfaketime loaded (its clock is the file's)."""
    try:
        return "libfaketime" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def clocks(ev: Evidence, bounds: Bounds, out: Verdict) -> None:
    changes = [(name.removeprefix(CLOCK), at) for name, at in ev.phases if name.startswith(CLOCK)]
    out.figures.clocks = [name for name, _ in changes]
    if not changes:
        return
    for life in ev.lives:
        if life.role == "worker" and life.killed is not None:
            in_flight = [
                run
                for runs in ev.executions.values()
                for run in runs
                if run.pid == life.pid
                and life.spawned <= run.start <= life.killed
                and run.end is None
                and not (life.killed_store_at is None and _delayed(ev, run))
            ]
            reruns(
                ev, bounds, out, in_flight, moment=life.killed, what=f"pid {life.pid} was killed"
            )


def _delayed(ev: Evidence, run: Execution) -> bool:
    """Whether ``run`` is a retry after a failed attempt: the task's delay (its
    ``run_at``) was written by the clock of the worker that failed it."""
    return any(r.token < run.token and r.outcome == "raise" for r in ev.executions[run.task])


def _next_grant_unstarted(ev: Evidence, run: Execution, moment: float, within: float) -> bool:
    """Whether the task's next reservation after ``run`` never began, its owner
    killed in turn (or exited) within ``within`` seconds of ``moment``."""
    granted = [
        e for e in reservations(ev.events.get(run.task, [])) if (e.attempt or 0) > run.attempt
    ]
    if not granted:
        return False
    following = min(granted, key=lambda e: e.attempt or 0)
    if any(r.attempt == following.attempt for r in ev.executions.get(run.task, [])):
        return False
    pid = owner_pid(following.owner)
    return any(
        life.pid == pid
        and (life.exited is not None or moment <= (life.killed or -math.inf) <= moment + within)
        for life in ev.lives
    )


def reruns(
    ev: Evidence,
    bounds: Bounds,
    out: Verdict,
    in_flight: list[Execution],
    *,
    moment: float,
    what: str,
) -> None:
    """I8: each of ``in_flight`` runs again under a newer token within
    ``bounds.recovery`` of ``moment`` (monotonic), when ``what`` happened."""
    for run in in_flight:
        later = [r.start for r in ev.executions.get(run.task, []) if r.token > run.token]
        if _next_grant_unstarted(ev, run, moment, 2 * bounds.recovery):
            continue  # its next owner was lost too (I4 judges that grant)
        if not later:
            task = ev.tasks.get(run.task)
            if task is None or task.status is Status.FAILED:
                continue  # I2 names a task missing; a failed one used up its attempts
            if task.status is Status.DONE and task.lease_token == run.token:
                continue  # its ending reached the store before the fault
            out.add("I8", run.task, f"token {run.token} never ran again after {what}")
            continue
        took = min(later) - moment
        out.figures.rerun.append(took)
        if took > bounds.recovery:
            out.add(
                "I8",
                run.task,
                f"ran again {took:.2f}s after {what} (bound {bounds.recovery:.2f}s, "
                "on the monotonic clock)",
            )
