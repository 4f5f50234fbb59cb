"""The probe: the one task the chaos workers run (``tenure worker --app
chaos.probe:app``), and the journal of every attempt it makes.

Each execution appends ``start`` (task, attempt, lease token, owner, pid,
priority at reservation, duration) as it begins and ``end`` (its outcome) as it returns,
or ``abandon`` when the worker cancels it because its lease is gone. The body is
a coroutine that sleeps for its ``duration``: an abandoned execution is
cancelled where it waits, so its ``abandon`` line says when it stopped. It
fails, as planned, each attempt up to ``fail_attempts``, so retries and their
priority steps happen too.

Hooks append ``ack`` once the store accepted an ending (``succeeded``,
``retrying``, ``failed``): the worker was told its write is durable. Hooks run
after the write, on a thread of their own, so an ``ack`` may be missing (its
worker was killed meanwhile), never early.

A reservation answered after its lease is never run: the worker hands each
of its tasks back with a warning (:data:`~tenure.worker.worker.HANDED_BACK`),
which a logging handler turns into a ``handback`` line (task, attempt, pid),
so the checker knows why that attempt was granted and never started.

The App's store comes from ``--url`` (or ``$TENURE_URL``); the journals' folder
from ``$TENURE_CHAOS_JOURNALS``. :func:`declare` puts the same task on another
App (a deliberately broken build in the tests).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Coroutine
from functools import partial
from typing import Any

import tenure
from chaos.journal import of_process
from chaos.poison import declare as declare_poison
from tenure.function import TaskFunction
from tenure.hooks import HookKind, Outcome
from tenure.retry import Backoff
from tenure.worker.worker import HANDED_BACK

NAME = "chaos.probe"
TOPIC = "chaos"
MAX_ATTEMPTS = 3
BACKOFF = Backoff(base=0.05, maximum=0.2, priority_step=1)
"""Quick retries, each one priority step lower (what I7 watches)."""
ACCEPTED: tuple[HookKind, ...] = ("succeeded", "retrying", "failed")
"""The hooks that fire once the store accepted an ending."""

Probe = TaskFunction[[float, int], Coroutine[Any, Any, int]]


class PlannedFailure(Exception):
    """An attempt the producer asked to fail (``fail_attempts``)."""


async def probe(duration: float, fail_attempts: int = 0) -> int:
    """Sleep ``duration`` seconds; fail attempts up to ``fail_attempts``."""
    current = tenure.current()
    journal = of_process("probe")
    fields = {
        "task": current.task.id,
        "attempt": current.attempt,
        "token": current.fencing_token,
        "pid": os.getpid(),
    }
    owner, priority = current.lease.owner, current.task.priority
    journal.write("start", owner=owner, priority=priority, duration=duration, **fields)
    try:
        await asyncio.sleep(duration)
    except asyncio.CancelledError:
        journal.write("abandon", **fields)
        raise
    failing = current.attempt <= fail_attempts
    journal.write("end", outcome="raise" if failing else "ok", **fields)
    if failing:
        raise PlannedFailure(f"attempt {current.attempt} fails as planned")
    return current.attempt


def _acknowledged(kind: HookKind, outcome: Outcome) -> None:
    task = outcome.task
    of_process("probe").write(
        "ack",
        kind=kind,
        task=task.id,
        attempt=task.attempts,
        token=task.lease_token,
        pid=os.getpid(),
    )


class _HandBacks(logging.Handler):
    """Journals each task the worker hands back unrun."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg is HANDED_BACK:
            of_process("probe").write(
                "handback",
                task=getattr(record, "task_id", None),
                attempt=getattr(record, "attempt", None),
                pid=os.getpid(),
            )


def declare(on: tenure.App) -> Probe:
    """Declare the probe task and its journaling hooks on the App ``on``."""
    function: Probe = on.task(name=NAME, topic=TOPIC, retries=MAX_ATTEMPTS - 1, backoff=BACKOFF)(
        probe
    )
    for kind in ACCEPTED:
        on.on(kind)(partial(_acknowledged, kind))
    worker_log = logging.getLogger("tenure.worker")
    if not any(isinstance(h, _HandBacks) for h in worker_log.handlers):
        worker_log.addHandler(_HandBacks())
    return function


app = tenure.App()
task = declare(app)
poison_task = declare_poison(app)
