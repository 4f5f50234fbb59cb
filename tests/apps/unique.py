"""An App of unique tasks for the process tests. Its store URL comes from
$TENURE_URL or ``--url``. Each execution appends "start end pid" to a journal
file, so a test can check that no two executions of one lock overlapped."""

from __future__ import annotations

import os
import time

import tenure

app = tenure.App()


def journal(path: str, seconds: float) -> None:
    """Work for ``seconds`` and record the interval (one short append: atomic)."""
    start = time.time()
    time.sleep(seconds)
    line = f"{start:.6f} {time.time():.6f} {os.getpid()}\n"
    with open(path, "a", encoding="utf-8") as out:
        out.write(line)


@app.task(
    topic="unique",
    unique=tenure.Unique(lock="while_executing", on_conflict="reschedule", reschedule_in=0.05),
)
def exclusive(path: str, seconds: float) -> None:
    """Identical calls never run at the same time: a twin waits and retries."""
    journal(path, seconds)


@app.task(topic="unique", unique=tenure.Unique(lock="until_executed"))
def singleton(path: str, seconds: float) -> None:
    """At most one of these exists, from its enqueue until it ends."""
    journal(path, seconds)


@app.task(
    topic="unique",
    unique=tenure.Unique(lock="while_executing", on_conflict="reschedule", reschedule_in=0.5),
)
def uniq_at_runtime(path: str, seconds: float) -> None:
    """The seed's UniqAtRuntimeWorker, with its 10 s of work scaled down."""
    journal(path, seconds)
