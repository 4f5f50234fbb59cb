"""tenure's chaos suite (``make chaos``, ``python -m chaos``): the whole promise,
under sustained faults, with real processes.

tenure promises at-least-once execution, at most one accepted ending per
attempt (fenced by the lease token), durability once ``enqueue`` returns, and
recovery that never trusts two clocks. Each scenario runs real ``tenure
worker`` processes, producer processes and a scheduler against a real store,
injects faults (SIGKILL, SIGSTOP, a PostgreSQL crash), drains the queue, and
then an offline checker (:mod:`chaos.checker`) reads what every process wrote
down and what the store holds, and names each broken promise.

Like ``benchmarks/``, it lives beside the package, never in the wheel: it is for
the people who work on tenure.

A scenario lives in three places of one name, by what each part is for:
:mod:`chaos.scenarios` ``.NAME`` is the scenario (its plans, what it injects,
its App, target, checks and figures: a
:class:`~chaos.scenarios.base.Scenario`), :mod:`chaos.checks` ``.NAME`` the
checks kept for it, and ``chaos.NAME``, where it has one, what its processes
run or are placed in (``poison``, ``election``, ``unique``, ``skew``).

- :mod:`chaos.journal`: the append-only journals every process writes;
- :mod:`chaos.probe`: the task the workers run, which journals each attempt;
- :mod:`chaos.producers`: processes that enqueue and journal what returned;
- :mod:`chaos.harness`: starts, faults, restarts and drains the processes;
  it also stands several scheduler candidates and runs workers on the
  process pool;
- :mod:`chaos.cluster`: a private PostgreSQL 15 cluster to crash;
- :mod:`chaos.poison`: tasks that kill or wedge their process;
- :mod:`chaos.election`: the App whose periodic task the schedulers enqueue;
- :mod:`chaos.unique`: the unique tasks, one per lock phase and strategy;
- :mod:`chaos.skew`: wall clocks moved on purpose (libfaketime);
- :mod:`chaos.follower`: an event follower that journals what it is given;
- :mod:`chaos.netns`: network namespaces to cut a worker's host off;
- :mod:`chaos.sessions`: the PostgreSQL sessions to terminate, by process;
- :mod:`chaos.evidence`: what the checker reads, gathered after the drain;
- :mod:`chaos.verdict`: how checks answer and compose (a check that raises
  reads ``unknown``, the others still count);
- :mod:`chaos.checker`: the core checks, I1-I8 and the rest every scenario is
  held to, each a check of its own, and the figures;
- :mod:`chaos.checks`: the checks kept beside their scenarios;
- :mod:`chaos.scenarios`: the scenarios and their profiles.
"""

from __future__ import annotations

from pathlib import Path

from tenure.errors import TenureError

ROOT = Path(__file__).resolve().parents[1]
"""The checkout's root: worker processes run there, so they import this package."""


class ChaosError(TenureError):
    """A scenario could not be run (a process would not start, a deadline passed
    before the condition it waited for)."""


class CannotRunHere(ChaosError):
    """A scenario needs what this machine lacks or forbids (a program, root to
    mount a disk or make a network namespace): not run, and said so in one
    line, rather than failed."""
