"""The unique tasks of the unique-torture scenario (``tenure worker --app
chaos.unique:app``): one task per lock phase and conflict strategy, each the
probe's body (so its executions are journaled as the probe's are), locked on
its ``key`` argument alone.

A task's name says its rule: ``chaos.unique.<lock>.<on_conflict>``
(:func:`rule_of` reads it back for the checker). Tasks a scenario enqueues
inside a transaction it then rolls back get ids that start with
:data:`ROLLED_BACK`, so the checker can tell that none of them was ever
stored; the tasks that prove, after the drain, that no lock was left behind get
ids that start with :data:`FINAL`.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import tenure
from chaos.probe import BACKOFF, MAX_ATTEMPTS, TOPIC, declare, probe
from tenure.function import TaskFunction

PREFIX = "chaos.unique."
RULES = (
    ("until_executing", "reject"),
    ("until_executing", "raise"),
    ("while_executing", "reject"),
    ("while_executing", "reschedule"),
    ("while_executing", "raise"),
    ("until_executed", "reject"),
    ("until_executed", "raise"),
)
"""Every lock phase with every conflict strategy it allows."""
TTL = 600.0
"""The locks' time to live: far beyond a run, so no lock may expire in one."""
RESCHEDULE_IN = 0.2
"""Seconds a rescheduled (or, after a ``raise`` at start, retried) task waits."""
ROLLED_BACK = "rolled-back-"
FINAL = "final-"

Held = TaskFunction[[int, float], Coroutine[Any, Any, int]]


def name_of(lock: str, on_conflict: str) -> str:
    return f"{PREFIX}{lock}.{on_conflict}"


def rule_of(name: str) -> tuple[str, str] | None:
    """(lock phase, conflict strategy) of a unique task's name; None for others."""
    if not name.startswith(PREFIX):
        return None
    lock, _, on_conflict = name[len(PREFIX) :].partition(".")
    return lock, on_conflict


async def held(key: int, duration: float) -> int:
    """The probe's body, under a unique lock on ``key``."""
    return await probe(duration, 0)


def _key(key: int, duration: float) -> int:
    return key


def declare_unique(on: tenure.App) -> dict[str, Held]:
    """Declare a unique task for every rule of :data:`RULES` on the App ``on``."""
    made: dict[str, Held] = {}
    for lock, on_conflict in RULES:
        rule = tenure.Unique(
            lock=lock, on_conflict=on_conflict, ttl=TTL, key=_key, reschedule_in=RESCHEDULE_IN
        )
        name = name_of(lock, on_conflict)
        made[name] = on.task(
            name=name, topic=TOPIC, retries=MAX_ATTEMPTS - 1, backoff=BACKOFF, unique=rule
        )(held)
    return made


app = tenure.App()
probe_task = declare(app)
tasks = declare_unique(app)
