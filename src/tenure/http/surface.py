"""The HTTP API's routes, declared once: for each, its method and path, the
parameters it takes (each with how the server reads it and its schema), its
body, its answer and its refusals; and the options an enqueue's body may give.
:mod:`tenure.http.routes` serves this table and :mod:`tenure.http.openapi`
describes it, so what the server accepts and what the document promises cannot
drift apart: a filter added to the listing is one
:class:`~tenure.http.inputs.Param` more in :data:`LIST_TASKS`, read and checked
by the server, passed to :class:`~tenure.store.types.TaskFilter` under its
keyword, and in the document with its schema; an option added to
:data:`OPTIONS` is read, passed to
:meth:`~tenure.function.TaskFunction.options` and documented alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any

from tenure import checks
from tenure.checks import INT32, INT64, MAX_NAME_LENGTH, MAX_SECONDS
from tenure.http import inputs
from tenure.http.inputs import DEFAULT_LIMIT, MAX_LIMIT, PAGING, Kind, Param
from tenure.http.schemas import (
    ARGUMENTS,
    KEYWORD_ARGUMENTS,
    NULL,
    TIME,
    Schema,
    given,
    nullable,
    obj,
    only,
    ref,
    text,
)
from tenure.store import validate
from tenure.store.schedules import NAME_PATTERN
from tenure.store.validate import MAX_DESCRIPTION_LENGTH, MAX_META

STATUS = Kind(ref("Status"), validate.status)
TEXT = Kind(text(), checks.text)
MOMENT = Kind(TIME, inputs.moment)
SECONDS = Kind({"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SECONDS}, inputs.span)
DELAY = Kind({"type": "number", "minimum": 0, "maximum": MAX_SECONDS}, inputs.delay)
EXPIRES = Kind({"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SECONDS}, inputs.expires)
PRIORITY = Kind({"type": "integer", "minimum": INT32[0], "maximum": INT32[1]}, inputs.priority)
MOST = Kind({"type": "integer", "minimum": 1, "maximum": INT64[1]}, inputs.most)
DESCRIPTION = Kind(text(MAX_DESCRIPTION_LENGTH), inputs.description)
TASK_ID = Kind({"type": "string", "minLength": 1, "maxLength": MAX_NAME_LENGTH}, checks.text)
"""A task's id in a path. Its schema leaves out TEXT's no-NUL pattern, which the
reader still enforces: a NUL cannot reach a path unencoded, and the pattern on a
path parameter leaves schema-driven clients (schemathesis) unable to generate
any value at all."""
NEW_ID = Kind(text(pattern="^(?!\\.\\.?$)[^/\\u0000-\\u001f\\u007f-\\u009f]*$"), inputs.new_id)
"""A task id a client chooses: one segment of a URL (no ``/``, no control
character, neither ``.`` nor ``..``)."""
META = Kind(
    {
        "type": "object",
        "propertyNames": text(),
        "additionalProperties": text(),
        "maxProperties": MAX_META,
    },
    inputs.meta,
)
"""A task's meta: names and values, both text."""
META_FILTER = Kind(META.schema, inputs.meta_filter)
"""A filter on meta in a body: the pairs a task's meta must hold."""
META_QUERY = Kind(META.schema, inputs.meta_query, json=True)
"""A filter on meta in a query string: a JSON object, ``{"customer":"c-42"}``."""


NUMBER_OF_SECONDS = {"type": "number", "maximum": MAX_SECONDS}
EVERY = Kind({**NUMBER_OF_SECONDS, "minimum": 1}, inputs.every)
CATCH_UP = Kind({**NUMBER_OF_SECONDS, "minimum": 0}, inputs.delay)
ARRAY = Kind(ARGUMENTS, inputs.array)
OBJECT = Kind(KEYWORD_ARGUMENTS, inputs.json_object)
BOOLEAN = Kind({"type": "boolean"}, inputs.boolean)
CRON = Kind({**text(), "format": "cron"}, inputs.cron)
"""A cron expression: the ``cron`` format (which no pattern states whole: the
fields' ranges, names and steps, and a date that comes, not 30 February)."""
TIME_ZONE = Kind(ref("TimeZone"), inputs.time_zone)
"""An IANA time zone name, one of those the server knows (the document lists them)."""
SCHEDULE_NAME = Kind(text(pattern=NAME_PATTERN), inputs.schedule_name)
"""A schedule's name: part of its tasks' ids and of URLs, so no slash, space
or control character."""


def count(most: int) -> Kind:
    """A whole number from 1 to ``most``."""
    return Kind({"type": "integer", "minimum": 1, "maximum": most}, inputs.count(most))


def choice(*choices: str) -> Kind:
    """One of ``choices``."""
    return Kind({"type": "string", "enum": list(choices)}, inputs.choice(*choices))


@dataclass(frozen=True, slots=True)
class Operation:
    """One method of one path: what it is called and does (``id``, ``summary``),
    the :class:`~tenure.http.routes.Api` method that answers it (``handler``),
    what it takes, and what it answers: ``status`` with ``returns`` (and the
    response's ``headers`` and ``links``), or one of the error statuses of
    every route and ``refusals``."""

    method: str
    path: str
    _: KW_ONLY
    id: str
    summary: str
    handler: str
    answer: str
    returns: Schema
    refusals: tuple[str, ...] = ()
    parameters: tuple[Param, ...] = ()
    body: Schema | None = None
    status: int = 200
    extra: Mapping[str, Any] = field(default_factory=dict)


OPTIONS = (
    Param("delay", DELAY, where="body"),
    Param("priority", PRIORITY, where="body"),
    Param("group", TEXT, keyword="group_id", where="body"),
    Param("sub_topic", TEXT, where="body"),
    Param("description", DESCRIPTION, where="body"),
    Param("id", NEW_ID, where="body"),
    Param("meta", META, where="body"),
    Param("expires", EXPIRES, where="body"),
)
"""The ``options`` of an enqueue's body, each named as the API names it and
read under its keyword of :meth:`~tenure.function.TaskFunction.options`."""


STORE = ("503",)
BY_ID = ("404", "409", "503")

ID = Param(
    "id",
    TASK_ID,
    "a task's id, or (for reads) the start of one that begins no other id; "
    "an id with a '/' in it cannot be named here",
    where="path",
)

ENQUEUE = Operation(
    "POST",
    "/api/tasks",
    id="enqueueTask",
    summary="Enqueue a registered task by name (its declaration sets the rest)",
    handler="enqueue_task",
    body=ref("EnqueueRequest"),
    status=201,
    answer="The task, stored",
    returns=ref("Task"),
    extra={
        "headers": {"Location": {"schema": {"type": "string"}, "required": True}},
        "links": {
            name: {"operationId": operation, "parameters": {"id": "$response.body#/id"}}
            for name, operation in (
                ("GetTask", "getTask"),
                ("TaskEvents", "listTaskEvents"),
                ("CancelTask", "cancelTask"),
                ("RetryTask", "retryTask"),
            )
        },
    },
    refusals=("400", "404", "409", "413", "415", *STORE),
)

LIST_TASKS = Operation(
    "GET",
    "/api/tasks",
    id="listTasks",
    summary="One page of matching tasks, newest first",
    handler="list_tasks",
    parameters=(
        # Every parameter but those of inputs.PAGING is a keyword of TaskFilter.
        Param("status", STATUS, "only tasks in this status"),
        Param("topic", TEXT, "only tasks of this topic"),
        Param("sub_topic", TEXT, "only tasks of this sub-topic"),
        Param("name", TEXT, "only tasks of this registered name"),
        Param("group", TEXT, "only tasks of this group id", keyword="group_id"),
        Param("created_from", MOMENT, "only tasks created at or after this time"),
        Param("created_to", MOMENT, "only tasks created before this time"),
        Param("meta", META_QUERY, 'only tasks whose meta holds these pairs: {"customer":"c-42"}'),
        Param("cursor", TEXT, "the page after the one that answered this cursor"),
        Param("limit", count(MAX_LIMIT), "most tasks on the page", DEFAULT_LIMIT),
        Param(
            "order",
            choice("newest", "oldest"),
            "newest or oldest first (a cursor keeps the order it was made with)",
            "newest",
        ),
    ),
    answer="A page of tasks",
    returns=ref("TaskPage"),
    refusals=STORE,
)


def by_id(
    method: str,
    path: str,
    handler: str,
    returns: str = "Task",
    *,
    id: str,
    summary: str,
    answer: str,
) -> Operation:
    """A route of one task, named by its id (or a prefix of it, for reads)."""
    return Operation(
        method,
        path,
        id=id,
        summary=summary,
        handler=handler,
        parameters=(ID,),
        answer=answer,
        returns=ref(returns),
        refusals=BY_ID,
    )


MAX_BULK = 1000
"""Most tasks one bulk retry or cancel changes: a filter that matches more is
refused whole, and asks to be narrowed."""

FILTER_FIELDS = tuple(
    replace(param, where="body", kind=META_FILTER if param.name == "meta" else param.kind)
    for param in LIST_TASKS.parameters
    if param.key not in PAGING
)
"""A bulk change's ``filter``: the listing's filters, in a body."""

IDS = Kind({"type": "array", "items": TEXT.schema, "maxItems": MAX_BULK}, inputs.id_list(MAX_BULK))
FILTER = Kind(
    {
        **obj({param.name: nullable(param.kind.schema) for param in FILTER_FIELDS}, required=()),
        # At least one filter: one given not null (meta, with a pair), or it would match all.
        **only(
            {
                "anyOf": [
                    given(
                        param.name,
                        {"type": "object", "minProperties": 1}
                        if param.name == "meta"
                        else {"not": NULL},
                    )
                    for param in FILTER_FIELDS
                ]
            }
        ),
    },
    inputs.fields_of(FILTER_FIELDS),
)
BULK_FIELDS = (
    Param("ids", IDS, "these tasks (whole ids)", where="body"),
    Param("filter", FILTER, "or the tasks these filters match", where="body"),
    Param("dry_run", BOOLEAN, "only say which tasks it would change", where="body"),
)
"""A bulk change's body: ``ids`` or ``filter``, and ``dry_run``."""


def bulk(action: str, verb: str, does: str) -> Operation:
    return Operation(
        "POST",
        f"/api/tasks/{action}",
        id=f"{action}Tasks",
        summary=f"{verb} the tasks of ids or of a filter (at most {MAX_BULK}): {does}",
        handler=f"{action}_tasks",
        body=ref("BulkChange"),
        answer="What was changed, and what was refused and why",
        returns=ref("BulkResult"),
        refusals=("400", "413", "415", *STORE),
    )


SCHEDULE_FIELDS = (
    Param("task", TEXT, "the registered name of the task it enqueues", where="body"),
    Param("cron", CRON, "a cron expression (five fields, or six with seconds)", where="body"),
    Param("every", EVERY, "or an interval, in seconds", where="body"),
    Param("tz", TIME_ZONE, "the IANA time zone its cron expression is read in (UTC)", where="body"),
    Param("args", ARRAY, "the task's arguments", where="body"),
    Param("kwargs", OBJECT, "the task's keyword arguments", where="body"),
    Param("catch_up", CATCH_UP, "seconds of missed ticks enqueued after a gap", where="body"),
)
"""What a schedule's body may give (``null`` is the same as leaving one out):
``name``, ``task`` and one of ``cron`` or ``every`` to add one, any of them to
edit one, and ``paused`` (:data:`PAUSED`) to pause or resume one."""

PAUSED = Param("paused", BOOLEAN, "true pauses it; false resumes it, from now", where="body")
NAME = Param("name", SCHEDULE_NAME, "the schedule's name", where="body")
BY_NAME = Param("name", SCHEDULE_NAME, "a schedule's name", where="path")
SCHEDULE_BODY = ("400", "413", "415")


def _schedule(method: str, id: str, summary: str, handler: str, **more: Any) -> Operation:
    """A route of one schedule, named by its name."""
    return Operation(
        method,
        "/api/schedules/{name}",
        id=id,
        summary=summary,
        handler=handler,
        parameters=(BY_NAME,),
        answer=more.pop("answer", "The schedule"),
        returns=more.pop("returns", ref("Schedule")),
        refusals=("404", *more.pop("refusals", ()), *STORE),
        **more,
    )


SCHEDULES = (
    Operation(
        "GET",
        "/api/schedules",
        id="listSchedules",
        summary="Every periodic schedule, declared in code or added at run time, by name",
        handler="list_schedules",
        answer="The schedules, each with its next and last ticks",
        returns=ref("Schedules"),
        refusals=STORE,
    ),
    Operation(
        "POST",
        "/api/schedules",
        id="addSchedule",
        summary="Add a schedule at run time: a registered task, from now",
        handler="add_schedule",
        body=ref("NewSchedule"),
        status=201,
        answer="The schedule, stored",
        returns=ref("Schedule"),
        extra={
            "headers": {"Location": {"schema": {"type": "string"}, "required": True}},
            "links": {
                link: {"operationId": operation, "parameters": {"name": "$response.body#/name"}}
                for link, operation in (
                    ("GetSchedule", "getSchedule"),
                    ("EditSchedule", "editSchedule"),
                    ("RemoveSchedule", "removeSchedule"),
                )
            },
        },
        refusals=(*SCHEDULE_BODY, "409", *STORE),
    ),
    _schedule("GET", "getSchedule", "One schedule", "get_schedule"),
    _schedule(
        "PATCH",
        "editSchedule",
        "Change a schedule added at run time (a new timing starts from now), or pause "
        "or resume any schedule",
        "edit_schedule",
        body=ref("ScheduleChange"),
        refusals=(*SCHEDULE_BODY, "409"),
    ),
    _schedule(
        "DELETE",
        "removeSchedule",
        "Delete a schedule added at run time",
        "remove_schedule",
        answer="What was removed",
        returns=ref("Removed"),
        refusals=("409",),
    ),
)
"""The schedules' routes (:mod:`tenure.http.schedules` answers them)."""
