"""The OpenAPI 3.1 document of the HTTP API, rendered from what the server
itself runs on.

The document is the API's contract: every route, parameter, body and response
shape, with the limits the API enforces (lengths, ranges, formats) so that a
client generated from it refuses what the server would. So it is not written
beside the code it describes, where the two drift apart unseen until
schemathesis runs: the routes and their parameters are the table the server
serves (:mod:`tenure.http.surface`), each parameter's schema declared with the
reader that checks it, and the answers' schemas are derived from the
dataclasses they are serialised from (:func:`tenure.http.schemas.derive`). What
is written here is what has no other home: the enqueue body, the error answers,
the wrappers of lists. The test suite runs schemathesis against the document:
each response is checked against the schema of its status, and generated bad
input must be refused with a 4xx.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping
from typing import Any

from tenure import __version__
from tenure.http.calls import calls, example_call
from tenure.http.inputs import Param
from tenure.http.operations import OPERATIONS
from tenure.http.schemas import (
    ARGUMENTS,
    COUNT,
    HOLDS_NUL,
    KEYWORD_ARGUMENTS,
    NULL,
    TIME,
    Schema,
    derive,
    given,
    nullable,
    obj,
    only,
    ref,
    schema_of,
    text,
)
from tenure.http.surface import (
    BULK_FIELDS,
    NAME,
    OPTIONS,
    PAUSED,
    SCHEDULE_FIELDS,
    Operation,
)
from tenure.store.flowcontrol import PausedTopic, TopicAgeing, TopicLimit, TopicRate
from tenure.store.types import EVENT_KINDS, Event, Page, QueueStats, WorkerInfo
from tenure.task import Status, Task
from tenure.timetable import zones

Signatures = Mapping[str, inspect.Signature]
"""The registered tasks' signatures, by name."""

NAMED: dict[type, str] = {
    Status: "Status",
    Task: "Task",
    Page: "TaskPage",
    Event: "Event",
    QueueStats: "Stats",
    WorkerInfo: "Worker",
    PausedTopic: "PausedTopic",
    TopicLimit: "TopicLimit",
    TopicRate: "TopicRate",
    TopicAgeing: "TopicAgeing",
}
"""The dataclasses (and the enum) that are schemas of their own, by name."""


def _answers() -> dict[str, Schema]:
    """The answers' schemas, each derived from the dataclass it is serialised
    from (:mod:`tenure.shapes`), refined where a type hint cannot say enough."""
    per_topic = {"additionalProperties": {"additionalProperties": {"minimum": 0}}}
    return {
        "Status": schema_of(Status, {}),
        "Task": derive(
            Task,
            NAMED,
            {
                "data": {"description": "what the task runs with: args, kwargs (and headers)"},
                "result": {"description": "what the task returned, once done"},
                "attempts": {"minimum": 0},
                "max_attempts": {"minimum": 1},
            },
        ),
        "TaskPage": derive(Page, NAMED, {"cursor": {"description": "the next page's cursor"}}),
        "Event": derive(
            Event,
            NAMED,
            {"cursor": {"description": "resumes a follower after this event"}, "attempt": COUNT},
            rename={"from_status": "from", "to_status": "to"},
            omit=("id",),
            add={"kind": {"enum": sorted(EVENT_KINDS)}},
        ),
        "Stats": derive(
            QueueStats,
            NAMED,
            {
                "since": {"description": "endings are counted from this time"},
                "counts": {**per_topic, "description": "tasks per topic and status"},
                "oldest_pending": {
                    "description": "per topic, since when its oldest runnable task has waited"
                },
                "endings": {
                    **per_topic,
                    "description": "tasks ended per topic and way since since",
                },
            },
            add={"workers_alive": COUNT},
        ),
        "Worker": derive(WorkerInfo, NAMED, {"held": COUNT}),
        "PausedTopic": derive(PausedTopic, NAMED),
        "TopicLimit": derive(TopicLimit, NAMED),
        "TopicRate": derive(TopicRate, NAMED),
        "TopicAgeing": derive(TopicAgeing, NAMED),
    }


def _enqueue_request(signatures: Signatures) -> Schema:
    options = obj({option.name: nullable(option.kind.schema) for option in OPTIONS}, required=())
    options["description"] = "per-enqueue choices; null is the same as leaving one out"
    request = obj(
        {
            "name": {**_task_name(signatures), "description": "the task's registered name"},
            "args": {**ARGUMENTS, "default": []},
            "kwargs": {**KEYWORD_ARGUMENTS, "default": {}},
            "options": options,
        },
        required=("name",),
    )
    if signatures:
        request.update(only(calls(signatures, "name")))
    return {**request, **_example(signatures, "name")}


def _task_name(signatures: Signatures) -> Schema:
    """A registered task's name: one of those the App registered, when known."""
    return {"type": "string", "enum": sorted(signatures)} if signatures else text()


def _example(signatures: Signatures, key: str) -> Schema:
    """An example of a body naming its task under ``key``: a call that binds."""
    if not signatures:
        return {}
    name = min(signatures)
    positional, keywords = example_call(signatures[name])
    return {"example": {key: name, "args": positional, "kwargs": keywords}}


def _schemas(signatures: Signatures) -> dict[str, Schema]:
    message = {"type": "string"}
    field = nullable({"type": "string", "description": "what was wrong; null: nothing sent"})
    return {
        "Error": obj({"error": obj({"field": field, "message": message})}),
        **_answers(),
        "TaskEvents": obj(
            {"task_id": {"type": "string"}, "events": {"type": "array", "items": ref("Event")}}
        ),
        "Workers": obj({"workers": {"type": "array", "items": ref("Worker")}}),
        "HoldsNul": HOLDS_NUL,
        "EnqueueRequest": _enqueue_request(signatures),
        **_schedule_schemas(signatures),
        "TimeZone": {
            "type": "string",
            # Listed as a rule, not an enum: client generators make an enum's names
            # identifiers, and the tz database's aliases (GMT+0, GMT-0) collide as such.
            **only({"enum": sorted(zones())}),
            "description": "an IANA time zone name the server knows (its tz database)",
            "examples": ["Europe/Berlin", "America/New_York", "UTC"],
        },
        "BulkChange": _bulk_change(),
        "BulkResult": obj(
            {
                "dry_run": {"type": "boolean"},
                "matched": {"type": "array", "items": {"type": "string"}},
                "changed": {"type": "array", "items": ref("Task")},
                "refused": {
                    "type": "array",
                    "items": obj({"id": {"type": "string"}, "error": {"type": "string"}}),
                },
            }
        ),
    }


def _bulk_change() -> Schema:
    fields = {param.name: nullable(param.kind.schema) for param in BULK_FIELDS}
    for param in BULK_FIELDS:
        fields[param.name]["description"] = param.description
    change = obj(fields, required=())
    change["description"] = "ids or filter; matched lists the ids tried (or, dry, to try)"
    change.update(
        only({"oneOf": [given("ids", {"type": "array"}), given("filter", {"type": "object"})]})
    )
    change["example"] = {"filter": {"status": "failed", "topic": "emails"}, "dry_run": True}
    return change


def _schedule_schemas(signatures: Signatures) -> dict[str, Schema]:
    """A schedule as :func:`~tenure.maintenance.schedules.schedule_json` writes
    it, and the bodies that add and change one (their fields declared in
    :mod:`tenure.http.surface`): a new one gives its task, the arguments that
    task takes and one timing; a change gives no two timings, and no zone with
    an interval (what it gives must also fit the rest of the schedule as
    stored, or it is refused with a 409)."""
    fields = {param.name: nullable(param.kind.schema) for param in SCHEDULE_FIELDS}
    fields["task"] = nullable(_task_name(signatures))
    for param in SCHEDULE_FIELDS:
        fields[param.name]["description"] = param.description
    task = {**_task_name(signatures), "description": fields["task"]["description"]}
    new = obj({NAME.name: NAME.kind.schema, **fields, "task": task}, required=("name", "task"))
    new["description"] = "a schedule added at run time: give cron or every (null: left out)"
    string, number = {"type": "string"}, {"type": "number"}
    timing = {
        "oneOf": [given("cron", string, every=NULL), given("every", number, cron=NULL, tz=NULL)]
    }
    new.update(only(timing, calls(signatures, "task")) if signatures else only(timing))
    new.update(_example(signatures, "task"))
    if "example" in new:
        new["example"] = {"name": "nightly", **new["example"], "cron": "0 2 * * *"}
    change = obj({**fields, PAUSED.name: nullable(PAUSED.kind.schema)}, required=())
    change["description"] = "what changes; a field left out or null stays as it is"
    change["not"] = {
        "anyOf": [given("cron", string, every=number), given("every", number, tz=string)]
    }
    optional_text, moment = nullable({"type": "string"}), nullable(TIME)
    schedule = obj(
        {
            "name": {"type": "string"},
            "task": {"type": "string"},
            "cron": optional_text,
            "every": nullable({"type": "number", "minimum": 1}),
            "tz": optional_text,
            "describe": {"type": "string", "description": "how people read its timing"},
            "args": {"type": "array", "items": {}},
            "kwargs": {"type": "object", "additionalProperties": {}},
            "catch_up": {"type": "number", "minimum": 0},
            "origin": {"enum": ["code", "store"], "description": "declared in code, or added"},
            "declared": {"type": "boolean", "description": "false: in code no longer"},
            "paused": {"type": "boolean"},
            "next_tick": {**moment, "description": "null while paused"},
            "last_tick": {**moment, "description": "the newest tick enqueued"},
            "last_task_id": optional_text,
        }
    )
    return {
        "Schedule": schedule,
        "Schedules": obj({"schedules": {"type": "array", "items": ref("Schedule")}}),
        "NewSchedule": new,
        "ScheduleChange": change,
        "Removed": obj({"name": {"type": "string"}, "removed": {"const": True}}),
    }


def _json(schema: Schema) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _error_response(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"description": description, "content": _json(ref("Error"))}
    if headers:
        response["headers"] = {
            name: {"schema": {"type": "string"}, "description": meaning, "required": True}
            for name, meaning in headers.items()
        }
    return response


def _errors() -> dict[str, Any]:
    """The error responses, by status."""
    return {
        "400": _error_response("The body is not JSON"),
        "401": _error_response(
            "No valid bearer token", {"WWW-Authenticate": "Bearer, with the realm and the error"}
        ),
        "404": _error_response(
            "No such task (or no such task name, for an enqueue), or no such schedule"
        ),
        "409": _error_response(
            "The task's status refuses the change, the prefix begins several ids, "
            "the id exists already, a unique task's lock is held, a schedule "
            "has that name already, or the schedule as stored refuses the change "
            "(declared in code, or the change does not fit the rest of it)"
        ),
        "413": _error_response("The body is too large"),
        "415": _error_response("The body is not declared as application/json"),
        "422": _error_response("A field, parameter or id is not valid: error.field names it"),
        "500": _error_response("The server failed; its log says why"),
        "503": _error_response(
            "The store cannot be reached now",
            {"Retry-After": "seconds to wait before trying again"},
        ),
    }


def _responses(success: dict[str, Any], *codes: str) -> dict[str, Any]:
    """``success`` and the error responses ``codes``, besides those of every
    route (a bad token, an unknown query parameter, a failure)."""
    chosen = sorted({"401", "422", "500", *codes})
    return {**success, **{code: {"$ref": f"#/components/responses/E{code}"} for code in chosen}}


def _parameter(param: Param) -> dict[str, Any]:
    schema = param.kind.schema
    if param.default is not None:
        schema = {**schema, "default": param.default}
    described = {
        "name": param.name,
        "in": param.where,
        "required": param.where == "path",
        "description": param.description,
    }
    return {**described, **({"content": _json(schema)} if param.kind.json else {"schema": schema})}


def _operation(operation: Operation) -> dict[str, Any]:
    described: dict[str, Any] = {"operationId": operation.id, "summary": operation.summary}
    if operation.body is not None:
        described["requestBody"] = {"required": True, "content": _json(operation.body)}
    query = [_parameter(param) for param in operation.parameters if param.where == "query"]
    if query:
        described["parameters"] = query
    success = {
        "description": operation.answer,
        "content": _json(operation.returns),
        **operation.extra,
    }
    described["responses"] = _responses({str(operation.status): success}, *operation.refusals)
    return described


def paths(operations: tuple[Operation, ...]) -> dict[str, Any]:
    """The document's paths: each operation under its path, the parameters of
    the path (which every operation on it must declare alike) once, beside them."""
    described: dict[str, dict[str, Any]] = {}
    for operation in operations:
        item = described.setdefault(operation.path, {})
        in_path = [_parameter(param) for param in operation.parameters if param.where == "path"]
        if in_path and item.setdefault("parameters", in_path) != in_path:
            raise ValueError(f"{operation.path}: its operations declare its parameters unlike")
        item[operation.method.lower()] = _operation(operation)
    return described


def document(
    *,
    secured: bool = True,
    operations: tuple[Operation, ...] = OPERATIONS,
    signatures: Signatures | None = None,
) -> dict[str, Any]:
    """The document of ``operations``, built anew (callers may change their
    copy); without the bearer requirement when the API is served without a
    token. ``signatures``: the registered tasks' signatures, by name, which
    say which names and arguments an enqueue or a schedule may give."""
    spec: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "tenure",
            "version": __version__,
            "description": "A durable task queue: enqueue registered tasks, follow and steer them.",
        },
        "paths": paths(operations),
        "components": {
            "schemas": _schemas(signatures or {}),
            "responses": {f"E{code}": response for code, response in _errors().items()},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
    if secured:
        spec["security"] = [{"bearer": []}]
    return copy.deepcopy(spec)  # nothing in it shared with the table
