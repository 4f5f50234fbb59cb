"""Checks of values at every boundary: bad input is refused with an
:class:`~tenure.errors.InvalidInput` naming the field, before anything is written.

The generic ones (text, numbers, seconds, times, tags, a unique rule) live here, in
the core, so task declarations, retry policies and the store all refuse the same
inputs the same way; :mod:`tenure.store.validate` adds the store's own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime
from typing import TypeVar

from tenure.errors import InvalidInput
from tenure.task import LockPhase, OnConflict, UniqueRule

MAX_NAME_LENGTH = 200
"""Longest topic, sub-topic, task name, id, group id, owner or tag, in characters."""

MAX_SECONDS = 10 * 366 * 24 * 3600.0
"""Longest delay, lease, snooze, timeout or backoff: ten years. Longer spans are
mistakes, and bounding them keeps every computed time representable."""
INT64 = (-(2**63), 2**63 - 1)
INT32 = (-(2**31), 2**31 - 1)


def text(value: object, field: str, *, max_length: int = MAX_NAME_LENGTH) -> str:
    """A non-empty string of at most ``max_length`` characters, without NUL."""
    if not isinstance(value, str):
        raise InvalidInput(field, f"must be a string, not {type(value).__name__}")
    if not value:
        raise InvalidInput(field, "must not be empty")
    if len(value) > max_length:
        raise InvalidInput(field, f"is {len(value)} characters, over the limit of {max_length}")
    if "\x00" in value:
        raise InvalidInput(field, "contains a NUL character")
    return value


def optional_text(value: object, field: str, *, max_length: int = MAX_NAME_LENGTH) -> str | None:
    return None if value is None else text(value, field, max_length=max_length)


def integer(
    value: object, field: str, *, minimum: int | None = None, bounds: tuple[int, int] = INT64
) -> int:
    """An int (not a bool) within ``bounds`` (64-bit by default) and ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(field, f"must be an integer, not {type(value).__name__}")
    low = bounds[0] if minimum is None else max(minimum, bounds[0])
    if value < low:
        raise InvalidInput(field, f"must be at least {low}, got {value}")
    if value > bounds[1]:
        raise InvalidInput(field, f"must be at most {bounds[1]}, got {value}")
    return value


def _real(value: object, field: str, what: str = "a number") -> int | float:
    """``value`` if it is an int or a float (a bool is neither, here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(field, f"must be {what}, not {type(value).__name__}")
    return value


def number(value: object, field: str, low: float, high: float) -> float:
    """A number (not a bool) from ``low`` to ``high``, both included."""
    value = _real(value, field)
    if not low <= value <= high:  # NaN fails this too
        raise InvalidInput(field, f"must be between {low:g} and {high:g}, got {value}")
    return float(value)


def seconds(value: object, field: str, *, allow_zero: bool = False) -> float:
    """A finite, positive (or, with ``allow_zero``, non-negative) number of seconds."""
    value = _real(value, field, "a number of seconds")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        bound = "zero or more" if allow_zero else "more than zero"
        raise InvalidInput(field, f"must be a finite number of seconds, {bound}; got {value}")
    if number > MAX_SECONDS:
        raise InvalidInput(field, f"must be at most {MAX_SECONDS:.0f} seconds (ten years)")
    return number


def moment(value: object, field: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidInput(field, "must be a timezone-aware datetime")
    return value


def names(values: object, field: str, what: str) -> list[str]:
    """A collection of names (topics, tags), each checked; never one bare string."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise InvalidInput(field, f"must be a collection of {what}, not {type(values).__name__}")
    return [text(value, field) for value in values]


def tag_set(values: object, field: str) -> tuple[str, ...]:
    return tuple(sorted(set(names(values, field, "tags"))))


def unique_rule(rule: object, field: str = "unique") -> UniqueRule:
    """A unique rule whose lock phase and conflict strategy go together."""
    if not isinstance(rule, UniqueRule):
        raise InvalidInput(field, f"must be a UniqueRule, not {type(rule).__name__}")
    lock = _member(LockPhase, rule.lock, f"{field}.lock")
    on_conflict = _member(OnConflict, rule.on_conflict, f"{field}.on_conflict")
    if on_conflict is OnConflict.RESCHEDULE and lock is not LockPhase.WHILE_EXECUTING:
        raise InvalidInput(
            f"{field}.on_conflict", f"reschedule needs the while_executing lock, not {lock}"
        )
    return UniqueRule(
        key=text(rule.key, f"{field}.key"),
        lock=lock,
        on_conflict=on_conflict,
        ttl=seconds(rule.ttl, f"{field}.ttl"),
        retry_in=seconds(rule.retry_in, f"{field}.retry_in", allow_zero=True),
    )


_Choice = TypeVar("_Choice", LockPhase, OnConflict)


def _member(kind: type[_Choice], value: object, field: str) -> _Choice:
    try:
        return kind(value if isinstance(value, str) else repr(value))
    except ValueError:
        allowed = ", ".join(member.value for member in kind)
        raise InvalidInput(field, f"unknown value {value!r}; expected one of {allowed}") from None
