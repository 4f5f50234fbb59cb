"""Producers: separate processes that enqueue probe tasks and journal every
enqueue that returned.

``python -m chaos.producers URL WORKLOAD_JSON`` enqueues ``count`` probe tasks
through the App's public API (``enqueue_many`` in batches, at a steady rate if
asked), and after each call that returned appends one ``enq`` record with the
ids it returned and their priority: once ``enqueue`` returns, the tasks must be
in the store (I2), whatever happens to the server afterwards. A call that
raises is journaled as ``enq-error`` and its tasks count as never acknowledged;
the producer tries again with new tasks until ``count`` were acknowledged or its
deadline passes (exit code 1). A producer may be told to stop early: the file
``until`` names appears.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
from dataclasses import asdict, dataclass

from chaos.journal import monotonic, of_process
from chaos.probe import MAX_ATTEMPTS, app, poison_task, task
from tenure.errors import TenureError

ERROR_PAUSE = 0.2
"""Seconds between a failed enqueue and the next try (the server is restarting)."""


@dataclass(frozen=True, slots=True)
class Workload:
    """What one producer enqueues: ``count`` tasks in batches of ``batch``, at
    ``rate`` tasks a second (0: as fast as the store takes them), each sleeping
    a duration drawn from ``durations``. A share ``flaky`` fails its first
    attempt, a share ``doomed`` every attempt (it ends failed). Each batch gets
    one of ``priorities``."""

    count: int
    batch: int = 10
    rate: float = 0.0
    durations: tuple[float, float] = (0.0, 0.0)
    flaky: float = 0.0
    doomed: float = 0.0
    priorities: tuple[int, ...] = (0,)
    seed: int = 0
    deadline: float = 600.0
    until: str | None = None
    """A file whose existence ends the producer early (after a whole batch)."""
    poison: tuple[str, ...] = ()
    """If given, poison tasks (:mod:`chaos.poison`) instead, of these kinds in turn."""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Workload:
        values = json.loads(text)
        values["durations"] = tuple(values["durations"])
        values["priorities"] = tuple(values["priorities"])
        values["poison"] = tuple(values.get("poison", ()))
        return cls(**values)


def calls(workload: Workload, rng: random.Random, size: int) -> list[tuple[float, int]]:
    """``size`` probe calls: (duration, attempts that fail)."""
    low, high = workload.durations
    made = []
    for _ in range(size):
        draw = rng.random()
        doomed, flaky = draw < workload.doomed, draw < workload.doomed + workload.flaky
        fails = MAX_ATTEMPTS if doomed else 1 if flaky else 0
        made.append((round(rng.uniform(low, high), 3), fails))
    return made


def produce(url: str, workload: Workload) -> int:
    """Enqueue the workload; 0 once all of it was acknowledged, else 1."""
    app.use(url)
    journal = of_process("producer")
    rng = random.Random(workload.seed)
    began = monotonic()
    pause = threading.Event()
    acknowledged = 0
    while acknowledged < workload.count:
        if workload.until is not None and os.path.exists(workload.until):
            break
        if monotonic() - began > workload.deadline:
            journal.write("gave-up", acknowledged=acknowledged)
            return 1
        if workload.rate:
            pause.wait(max(0.0, began + acknowledged / workload.rate - monotonic()))
        size = min(workload.batch, workload.count - acknowledged)
        priority = rng.choice(workload.priorities)
        try:
            if workload.poison:
                kinds = workload.poison
                made = [(kinds[(acknowledged + i) % len(kinds)],) for i in range(size)]
                ids = [h.id for h in poison_task.options(priority=priority).enqueue_many(made)]
            else:
                handles = task.options(priority=priority).enqueue_many(calls(workload, rng, size))
                ids = [handle.id for handle in handles]
        except TenureError as exc:
            journal.write("enq-error", count=size, error=f"{type(exc).__name__}: {exc}"[:300])
            pause.wait(ERROR_PAUSE)
            continue
        journal.write("enq", ids=ids, priority=priority)
        acknowledged += size
    app.close()
    return 0


def main(argv: list[str]) -> int:
    url, spec = argv
    return produce(url, Workload.from_json(spec))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
