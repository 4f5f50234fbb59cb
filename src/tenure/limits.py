"""Keys computed from a task's arguments that bound how its tasks run: a
concurrency limit (:class:`Limit`: at most so many tasks of one key at once)
and an ordered key (``@app.task(ordered_by=...)``: one task of a key at a
time, in enqueue order). Declared once, computed at each enqueue, kept with
the task; the store's reserve statements hold them across every worker.

A key is kept readable (``charge:acct-42``), so that an operator sees what a
waiting task waits on; a value too long for that is kept as its hash.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tenure.checks import MAX_NAME_LENGTH, integer, text
from tenure.errors import InvalidInput

MAX_KEY_LENGTH = 500
"""Longest key kept as it reads; a longer one is kept as its hash."""


@dataclass(frozen=True, slots=True)
class Limit:
    """At most ``max_running`` tasks of one key run at once, across every
    worker sharing the store: ``@app.task(concurrency=tenure.Limit(key=lambda
    account_id, **_: account_id, max_running=1))``.

    ``key`` is called with the task's arguments at enqueue, each by its
    name (so ``lambda account_id, **_: account_id`` fits however the task is
    called, its defaults filled in); its value (text,
    or anything JSON) names the key, and ``None`` puts the task under no
    limit. ``name`` is what keys are counted under: by default the task's
    name, and tasks of several names declared with one ``name`` share their
    keys' limits. A task over its limit waits pending, spending no attempt,
    while the tasks of other keys run."""

    key: Callable[..., Any]
    max_running: int = 1
    name: str | None = None

    def __post_init__(self) -> None:
        if not callable(self.key):
            raise InvalidInput("concurrency.key", "must be a function of the task's arguments")
        integer(self.max_running, "concurrency.max_running", minimum=1)
        if self.name is not None:
            text(self.name, "concurrency.name", max_length=MAX_NAME_LENGTH)


def key_of(
    scope: str,
    key: Callable[..., Any],
    signature: inspect.Signature,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
) -> str | None:
    """The key ``key`` gives for a call with ``args`` and ``kwargs`` of a
    function of ``signature``, under ``scope`` (``None`` when it gives ``None``)."""
    value = key(**by_name(signature, args, kwargs))
    if value is None:
        return None
    if not isinstance(value, str):
        try:
            value = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInput("key", f"a key must be text or JSON: {exc}") from None
    kept = f"{scope}:{value}"
    if len(kept) <= MAX_KEY_LENGTH and "\x00" not in kept:
        return kept
    return f"{scope}:sha256:{hashlib.sha256(value.encode()).hexdigest()}"


def by_name(
    signature: inspect.Signature, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """A call's arguments by parameter name, defaults filled in; those of a
    ``**kwargs`` parameter by their own names, unless a parameter has it
    (positional-only, given by position)."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:  # a positional-only name given to **kwargs: before Python
        given = dict(kwargs)  # 3.13, bind refuses what a call takes
        positional = [p for p in signature.parameters.values() if p.kind <= p.POSITIONAL_OR_KEYWORD]
        given.update((p.name, value) for p, value in zip(positional, args, strict=False))
        return given
    bound.apply_defaults()
    named: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            for extra, given in value.items():  # a parameter's own value first
                named.setdefault(extra, given)
        else:
            named[name] = value
    return named
