"""Validation at the store boundary: bad input is refused before anything is written.

Every store calls these same checks, so every backend refuses the same inputs with
the same :class:`~tenure.errors.InvalidInput`, naming the offending field.
"""

from __future__ import annotations

import operator
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from tenure import serializer
from tenure.checks import (
    INT32,
    INT64,
    MAX_NAME_LENGTH,
    MAX_SECONDS,
    integer,
    moment,
    names,
    number,
    optional_text,
    seconds,
    tag_set,
    text,
    unique_rule,
)
from tenure.errors import InvalidInput
from tenure.ids import new_id
from tenure.limits import MAX_KEY_LENGTH
from tenure.store.types import LeaderLease, NewTask, PreparedTask, ReserveParams, TaskFilter
from tenure.task import Lease, Status, TaskError

# The store's modules check everything through this one module: its own checks,
# and the core's generic ones.
__all__ = [
    "INT32",
    "INT64",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_ERROR_TEXT",
    "MAX_NAME_LENGTH",
    "MAX_PROGRESS_NOTE",
    "MAX_RESERVE_LIMIT",
    "MAX_SECONDS",
    "integer",
    "leader_lease",
    "lease",
    "leases",
    "moment",
    "names",
    "number",
    "optional_text",
    "page_limit",
    "prepare",
    "reserve_params",
    "scan",
    "seconds",
    "status",
    "tag_set",
    "task_error",
    "task_filter",
    "text",
    "topic_list",
    "unique_rule",
]

MAX_DESCRIPTION_LENGTH = 2000
MAX_PROGRESS_NOTE = 200
"""Most characters of a progress note: a line a person reads, not a log."""
MAX_RESERVE_LIMIT = 10_000
MAX_ERROR_TEXT = 64 * 1024
MAX_SCAN = 10_000_000
"""Most tasks one read may examine (``scan``): ten million, so that a value
typed by mistake cannot ask each page to walk a table of any size."""


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


def leases(values: Sequence[Lease], now: datetime | None) -> list[Lease]:
    """Every lease of a holder write, and its ``now``."""
    moment(now, "now")
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InvalidInput("leases", "must be a sequence of Lease")
    return [lease(value, "lease") for value in values]


def leader_lease(value: object) -> LeaderLease:
    if not isinstance(value, LeaderLease):
        raise InvalidInput("lease", f"must be a LeaderLease, not {type(value).__name__}")
    text(value.name, "lease.name")
    text(value.owner, "lease.owner")
    integer(value.token, "lease.token", minimum=1)
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


SHARED_FIELDS = (
    "topic",
    "sub_topic",
    "name",
    "group_id",
    "description",
    "priority",
    "max_attempts",
    "tags",
    "timeout",
    "run_at",
    "delay",
    "meta",
    "expires",
)
"""The fields of a task that the tasks of one batch usually share (a task
function's declaration and options), checked once for a run of them."""
_shared = operator.attrgetter(*SHARED_FIELDS)


def same_shared(task: NewTask | PreparedTask, other: NewTask | PreparedTask) -> bool:
    """Whether ``task`` holds the very same objects as ``other`` in every one
    of :data:`SHARED_FIELDS`: then what was checked or made of the one's holds
    for the other's."""
    return all(map(operator.is_, _shared(task), _shared(other)))


def prepare(
    task: NewTask, max_payload_bytes: int, like: tuple[NewTask, PreparedTask] | None = None
) -> PreparedTask:
    """Check every field of ``task`` and encode its data once.

    ``like`` is the task before it in the batch, as given and as prepared: the
    fields it holds the very same objects in (:data:`SHARED_FIELDS`) passed
    their checks already, and are taken from it as they were prepared."""
    if like is not None and same_shared(task, like[0]):
        shared = like[1]
        return PreparedTask(
            new_id() if task.id is None else task_id(task.id),
            shared.topic,
            shared.sub_topic,
            shared.name,
            serializer.dumps(task.data, "data", max_payload_bytes),
            shared.group_id,
            shared.description,
            shared.priority,
            shared.max_attempts,
            shared.tags,
            shared.timeout,
            shared.run_at,
            shared.delay,
            None if task.unique is None else unique_rule(task.unique),
            shared.meta,
            shared.expires,
            *limit_keys(task),
        )
    if task.run_at is not None and task.delay is not None:
        raise InvalidInput("delay", "give run_at or delay, not both")
    timeout = None if task.timeout is None else seconds(task.timeout, "timeout")
    limit_key, limit_max, order_key, fair_key = limit_keys(task)
    return PreparedTask(
        id=new_id() if task.id is None else task_id(task.id),
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
        meta=meta(task.meta),
        expires=None if task.expires is None else seconds(task.expires, "expires"),
        limit_key=limit_key,
        limit_max=limit_max,
        order_key=order_key,
        fair_key=fair_key,
    )


def limit_keys(task: NewTask) -> tuple[str | None, int | None, str | None, str | None]:
    """A task's limit key with its most, its order key and its fair key,
    checked: a limit key comes with its most, and a most with its key."""
    key = optional_text(task.limit_key, "limit_key", max_length=MAX_KEY_LENGTH)
    if (key is None) != (task.limit_max is None):
        raise InvalidInput("limit_max", "give a limit key and its most together, or neither")
    most = None if task.limit_max is None else integer(task.limit_max, "limit_max", minimum=1)
    order = optional_text(task.order_key, "order_key", max_length=MAX_KEY_LENGTH)
    fair = optional_text(task.fair_key, "fair_key", max_length=MAX_KEY_LENGTH)
    return key, most, order, fair


def task_id(value: object, field: str = "id") -> str:
    """A task id a caller chooses: text that is one segment of a URL, so that
    every task can be named in the HTTP API's paths and the dashboard's links:
    no ``/``, no control character, and neither ``.`` nor ``..``."""
    chosen = text(value, field)
    if "/" in chosen:
        raise InvalidInput(field, "must not contain '/': the id is part of the task's URL")
    if chosen in (".", ".."):
        raise InvalidInput(field, f"{chosen!r} names no task in a URL; choose another id")
    if any(unicodedata.category(char) == "Cc" for char in chosen):
        raise InvalidInput(field, "must not contain a control character (a tab, a newline…)")
    return chosen


MAX_META = 32
"""Most names one task's meta holds."""


def meta(value: object, field: str = "meta") -> dict[str, str] | None:
    """A task's meta: at most :data:`MAX_META` names, each with a value, both
    text; by name (``None`` for none)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidInput(field, f"must be a mapping of names to text, not {type(value).__name__}")
    if len(value) > MAX_META:
        raise InvalidInput(field, f"holds {len(value)} names, over the limit of {MAX_META}")
    checked = {
        text(name, f"{field} names"): text(v, f"{field}[{name!r}]") for name, v in value.items()
    }
    return dict(sorted(checked.items())) or None


def meta_pairs(value: object, field: str = "meta") -> tuple[tuple[str, str], ...] | None:
    """A filter's meta: the (name, value) pairs a task's meta must all hold."""
    if value is None:
        return None
    if isinstance(value, tuple | list):
        if not all(isinstance(pair, tuple | list) and len(pair) == 2 for pair in value):
            raise InvalidInput(field, "must be (name, value) pairs")
        value = dict(value)
    pairs = meta(value, field)
    return None if pairs is None else tuple(pairs.items())


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
    optional_text(filters.text, "text", max_length=MAX_DESCRIPTION_LENGTH)
    if filters.status is not None:
        status(filters.status)
    if filters.meta is not None:
        return replace(filters, meta=meta_pairs(filters.meta))
    return filters


def scan(value: object, field: str = "scan") -> int:
    """How many tasks one read may examine, to bound its work."""
    count = integer(value, field, minimum=1)
    if count > MAX_SCAN:
        raise InvalidInput(field, f"must be at most {MAX_SCAN}")
    return count


def page_limit(limit: object) -> int:
    value = integer(limit, "limit", minimum=1)
    if value > MAX_RESERVE_LIMIT:
        raise InvalidInput("limit", f"must be at most {MAX_RESERVE_LIMIT}")
    return value
