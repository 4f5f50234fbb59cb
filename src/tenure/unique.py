"""Unique tasks: the declaration (``@app.task(unique=Unique(...))``) and the lock key.

The key is a stable hash of the task's name and its unique arguments. By default
those are the arguments the caller passed, by parameter name, so ``f.enqueue(1)``
and ``f.enqueue(x=1)`` are the same task; defaults the caller left out are not part
of the key. ``key=`` replaces them with a function of the same
arguments, returning the JSON values that define uniqueness: a subset of them, or
values derived from them (``lambda a, b, n: [a, b, n % 5]``).

The store enforces the lock; this module only decides its key and rule.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tenure import checks
from tenure.errors import InvalidInput
from tenure.task import LockPhase, OnConflict, UniqueRule

DEFAULT_TTL = 600.0
"""Seconds a lock lives from the task's scheduled time, unless the App or the
task says otherwise: room for the queue's lag plus the run itself."""

DEFAULT_RESCHEDULE_IN = 5.0
"""Seconds a rescheduled task waits before it may start again."""


@dataclass(frozen=True, slots=True)
class Unique:
    """How a task is unique.

    ``lock``: ``"until_executing"`` (enqueue → start), ``"while_executing"``
    (start → end) or ``"until_executed"`` (enqueue → end). ``on_conflict``:
    ``"reject"`` (default), ``"raise"``, or ``"reschedule"`` (while_executing
    only). ``ttl``: the lock's lifetime in seconds from the scheduled time
    (``None``: the App's ``unique_ttl``). ``key``: a function of the task's
    arguments returning the values that make it unique. ``reschedule_in``:
    seconds before a rescheduled task (or one retried after a ``raise``
    conflict at start) may start again.
    """

    lock: LockPhase | str
    on_conflict: OnConflict | str = OnConflict.REJECT
    ttl: float | None = None
    key: Callable[..., Any] | None = None
    reschedule_in: float = DEFAULT_RESCHEDULE_IN

    def __post_init__(self) -> None:
        # Checked at declaration: a task that could never be enqueued is a bug
        # to see at import time, not at the first enqueue.
        self.rule("0" * 64, DEFAULT_TTL if self.ttl is None else self.ttl)
        if self.key is not None and not callable(self.key):
            raise InvalidInput("unique.key", "must be a function of the task's arguments")

    def rule(self, key: str, default_ttl: float) -> UniqueRule:
        """The rule the store enforces for one task whose lock key is ``key``."""
        return checks.unique_rule(
            UniqueRule(
                key=key,
                lock=self.lock,  # type: ignore[arg-type]  # validated into the enum
                on_conflict=self.on_conflict,  # type: ignore[arg-type]
                ttl=default_ttl if self.ttl is None else self.ttl,
                retry_in=self.reschedule_in,
            )
        )

    def values(
        self, signature: inspect.Signature, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> Any:
        """The values that define uniqueness for this call."""
        if self.key is not None:
            return self.key(*args, **kwargs)
        try:
            return dict(signature.bind(*args, **kwargs).arguments)
        except TypeError:  # a positional-only name given to **kwargs: bind refuses
            return {"args": list(args), "kwargs": dict(kwargs)}  # it before Python 3.13


def lock_key(name: str, values: Any) -> str:
    """A stable hash of the task name and its unique values (sha256, hex)."""
    try:
        canonical = json.dumps(
            [name, values], sort_keys=True, separators=(",", ":"), allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise InvalidInput("unique.key", f"unique values must be JSON: {exc}") from None
    return hashlib.sha256(canonical.encode()).hexdigest()
