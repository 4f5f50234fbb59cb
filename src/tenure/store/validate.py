"""Validation at the store boundary: bad input is refused before anything is written.

Every store calls these same checks, so every backend refuses the same inputs with
the same :class:`~tenure.errors.InvalidInput`, naming the offending field.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime
from typing import TypeVar

from tenure import serializer
from tenure.errors import InvalidInput
from tenure.ids import new_id
from tenure.store.types import (
    Lease,
    LockPhase,
    NewTask,
    OnConflict,
    PreparedTask,
    ReserveParams,
    TaskFilter,
    UniqueRule,
)
from tenure.task import Status, TaskError

MAX_NAME_LENGTH = 200
"""Longest topic, sub-topic, task name, id, group id, owner or tag, in characters."""

MAX_DESCRIPTION_LENGTH = 2000
MAX_RESERVE_LIMIT = 10_000
MAX_SECONDS = 10 * 366 * 24 * 3600.0
"""Longest delay, lease, snooze, timeout or backoff: ten years. Longer spans are
mistakes, and bounding them keeps every computed time representable."""
INT64 = (-(2**63), 2**63 - 1)
INT32 = (-(2**31), 2**31 - 1)
MAX_ERROR_TEXT = 64 * 1024


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


def topic_list(values: object, field: str = "topics") -> list[str] | None:
    """``None`` (any topic) or a non-empty list of topics."""
    if values is None:
        return None
    topics = names(values, field, "topics")
    if not topics:
        raise InvalidInput(field, "must name at least one topic, or be None for any")
    return topics


def lease(value: object, field: str = "lease") -> Lease:
    if not isinstance(value, Lease):
        raise InvalidInput(field, f"must be a Lease, not {type(value).__name__}")
    text(value.task_id, f"{field}.task_id")
    text(value.owner, f"{field}.owner")
    integer(value.token, f"{field}.token", minimum=1)
    return value


def task_error(value: object, field: str = "error") -> TaskError:
    """A TaskError; over-long text is cut (a failure must never fail to be recorded)."""
    if not isinstance(value, TaskError):
        raise InvalidInput(field, f"must be a TaskError, not {type(value).__name__}")
    parts = (value.type, value.message, value.traceback)
    if not all(isinstance(part, str) for part in parts):
        raise InvalidInput(field, "type, message and traceback must be strings")
    cut = [part.replace("\x00", "")[:MAX_ERROR_TEXT] for part in parts]
    return TaskError(cut[0][:MAX_NAME_LENGTH] or "Error", cut[1], cut[2])


def status(value: object, field: str = "status") -> Status:
    try:
        return Status(str(value))
    except ValueError:
        allowed = ", ".join(s.value for s in Status)
        raise InvalidInput(field, f"unknown status {value!r}; expected one of {allowed}") from None


def prepare(task: NewTask, max_payload_bytes: int) -> PreparedTask:
    """Check every field of ``task`` and encode its data once."""
    if task.run_at is not None and task.delay is not None:
        raise InvalidInput("delay", "give run_at or delay, not both")
    timeout = None if task.timeout is None else seconds(task.timeout, "timeout")
    return PreparedTask(
        id=new_id() if task.id is None else text(task.id, "id"),
        topic=text(task.topic, "topic"),
        sub_topic=text(task.sub_topic, "sub_topic"),
        name=text(task.name, "name"),
        data_json=serializer.dumps(task.data, "data", max_payload_bytes),
        group_id=optional_text(task.group_id, "group_id"),
        description=optional_text(
            task.description, "description", max_length=MAX_DESCRIPTION_LENGTH
        ),
        priority=integer(task.priority, "priority", bounds=INT32),
        max_attempts=integer(task.max_attempts, "max_attempts", minimum=1, bounds=INT32),
        tags=tag_set(task.tags, "tags"),
        timeout=timeout,
        run_at=moment(task.run_at, "run_at"),
        delay=0.0 if task.delay is None else seconds(task.delay, "delay", allow_zero=True),
        unique=None if task.unique is None else unique_rule(task.unique),
    )


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


def reserve_params(params: ReserveParams) -> ReserveParams:
    text(params.owner, "owner")
    integer(params.limit, "limit", minimum=1)
    if params.limit > MAX_RESERVE_LIMIT:
        raise InvalidInput("limit", f"must be at most {MAX_RESERVE_LIMIT}")
    seconds(params.lease_seconds, "lease_seconds")
    tag_set(params.tags, "tags")
    moment(params.now, "now")
    topic_list(params.topics)
    return params


def task_filter(filters: TaskFilter) -> TaskFilter:
    for name in ("topic", "sub_topic", "name", "group_id"):
        optional_text(getattr(filters, name), name)
    moment(filters.created_from, "created_from")
    moment(filters.created_to, "created_to")
    if filters.status is not None:
        status(filters.status)
    return filters


def page_limit(limit: object) -> int:
    value = integer(limit, "limit", minimum=1)
    if value > MAX_RESERVE_LIMIT:
        raise InvalidInput("limit", f"must be at most {MAX_RESERVE_LIMIT}")
    return value
