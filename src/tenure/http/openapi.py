"""The OpenAPI 3.1 document of the HTTP API, written as data where it has no
other home, derived where it has.

It is the API's contract: every route, parameter, body and response shape, with
the limits the API enforces (lengths, ranges, formats) so that a client
generated from it refuses what the server would. The answers' schemas are
derived from the dataclasses they are serialised from
(:func:`tenure.http.schemas.derive`), so a field added to ``Task`` is in the
document at once; the routes and their parameters are written here. The test
suite runs schemathesis against it: each response is checked against the
schema of its status, and generated bad input must be refused with a 4xx.
"""

from __future__ import annotations

from typing import Any

from tenure import __version__
from tenure.checks import INT32, MAX_NAME_LENGTH, MAX_SECONDS
from tenure.http.inputs import DEFAULT_LIMIT, MAX_LIMIT
from tenure.http.schemas import (
    COUNT,
    TIME,
    Schema,
    derive,
    nullable,
    obj,
    ref,
    schema_of,
    text,
)
from tenure.store.operating import DEFAULT_WINDOW
from tenure.store.types import EVENT_KINDS, Event, Page, QueueStats, WorkerInfo
from tenure.store.validate import MAX_DESCRIPTION_LENGTH
from tenure.task import Status, Task

NAMED: dict[type, str] = {
    Status: "Status",
    Task: "Task",
    Page: "TaskPage",
    Event: "Event",
    QueueStats: "Stats",
    WorkerInfo: "Worker",
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
    }


def _enqueue_request() -> Schema:
    options = obj(
        {
            "delay": nullable({"type": "number", "minimum": 0, "maximum": MAX_SECONDS}),
            "priority": nullable({"type": "integer", "minimum": INT32[0], "maximum": INT32[1]}),
            "group": nullable(text()),
            "sub_topic": nullable(text()),
            "description": nullable(text(MAX_DESCRIPTION_LENGTH)),
            "id": nullable(text(pattern="^[^/\\u0000]*$")),
        },
        required=(),
    )
    options["description"] = "per-enqueue choices; null is the same as leaving one out"
    request = obj(
        {
            "name": {**text(), "description": "the task's registered name"},
            "args": {"type": "array", "items": {}, "default": []},
            "kwargs": {"type": "object", "additionalProperties": {}, "default": {}},
            "options": options,
        },
        required=("name",),
    )
    request["example"] = {"name": "send-email", "args": ["ada@example.com"], "kwargs": {}}
    return request


def _schemas() -> dict[str, Schema]:
    message = {"type": "string"}
    field = nullable({"type": "string", "description": "what was wrong; null: nothing sent"})
    answers = _answers()
    return {
        "Error": obj({"error": obj({"field": field, "message": message})}),
        "Status": answers.pop("Status"),
        "Task": answers.pop("Task"),
        "TaskPage": answers.pop("TaskPage"),
        "Event": answers.pop("Event"),
        "TaskEvents": obj(
            {"task_id": {"type": "string"}, "events": {"type": "array", "items": ref("Event")}}
        ),
        **answers,
        "Workers": obj({"workers": {"type": "array", "items": ref("Worker")}}),
        "EnqueueRequest": _enqueue_request(),
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
        "404": _error_response("No such task (or no such task name, for an enqueue)"),
        "409": _error_response(
            "The task's status refuses the change, the prefix begins several ids, "
            "the id exists already, or a unique task's lock is held"
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


def _ok(schema: str, description: str) -> dict[str, Any]:
    return {"200": {"description": description, "content": _json(ref(schema))}}


def _task_id() -> dict[str, Any]:
    return {
        "name": "id",
        "in": "path",
        "required": True,
        "description": "a task's id, or (for reads) the start of one that begins no other "
        "id; an id with a '/' in it cannot be named here",
        "schema": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_LENGTH},
    }


STORE = ("503",)
BY_ID = ("404", "409", "503")


def _query(name: str, schema: Schema, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": schema,
        "description": description,
    }


def _list_parameters() -> list[dict[str, Any]]:
    return [
        _query("status", ref("Status"), "only tasks in this status"),
        _query("topic", text(), "only tasks of this topic"),
        _query("sub_topic", text(), "only tasks of this sub-topic"),
        _query("name", text(), "only tasks of this registered name"),
        _query("group", text(), "only tasks of this group id"),
        _query("created_from", TIME, "only tasks created at or after this time"),
        _query("created_to", TIME, "only tasks created before this time"),
        _query("cursor", text(), "the page after the one that answered this cursor"),
        _query(
            "limit",
            {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
            "most tasks on the page",
        ),
        _query(
            "order",
            {"type": "string", "enum": ["newest", "oldest"], "default": "newest"},
            "newest or oldest first (a cursor keeps the order it was made with)",
        ),
    ]


def _tasks_path() -> dict[str, Any]:
    """``/api/tasks``: enqueue (POST) and list (GET)."""
    created = {
        "description": "The task, stored",
        "content": _json(ref("Task")),
        "headers": {"Location": {"schema": {"type": "string"}, "required": True}},
        "links": {
            name: {"operationId": operation, "parameters": {"id": "$response.body#/id"}}
            for name, operation in (("GetTask", "getTask"), ("CancelTask", "cancelTask"))
        },
    }
    return {
        "post": {
            "operationId": "enqueueTask",
            "summary": "Enqueue a registered task by name (its declaration sets the rest)",
            "requestBody": {"required": True, "content": _json(ref("EnqueueRequest"))},
            "responses": _responses({"201": created}, "400", "404", "409", "413", "415", *STORE),
        },
        "get": {
            "operationId": "listTasks",
            "summary": "One page of matching tasks, newest first",
            "parameters": _list_parameters(),
            "responses": _responses(_ok("TaskPage", "A page of tasks"), *STORE),
        },
    }


def _task_paths() -> dict[str, Any]:
    """The paths of one task: itself, its events, retry and cancel."""
    one = _responses(_ok("Task", "The task"), *BY_ID)
    return {
        "/api/tasks/{id}": {
            "parameters": [_task_id()],
            "get": {"operationId": "getTask", "summary": "One task", "responses": one},
        },
        "/api/tasks/{id}/events": {
            "parameters": [_task_id()],
            "get": {
                "operationId": "listTaskEvents",
                "summary": "A task's events still in the log, oldest first",
                "responses": _responses(_ok("TaskEvents", "The task's events"), *BY_ID),
            },
        },
        "/api/tasks/{id}/retry": {
            "parameters": [_task_id()],
            "post": {
                "operationId": "retryTask",
                "summary": "Send a failed or cancelled task back to pending (a whole id)",
                "responses": one,
            },
        },
        "/api/tasks/{id}/cancel": {
            "parameters": [_task_id()],
            "post": {
                "operationId": "cancelTask",
                "summary": "Cancel a pending, running or snoozed task (a whole id)",
                "responses": one,
            },
        },
    }


def _other_paths() -> dict[str, Any]:
    window = {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SECONDS}
    return {
        "/api/stats": {
            "get": {
                "operationId": "getStats",
                "summary": "The queue at a glance",
                "parameters": [
                    _query(
                        "window",
                        {**window, "default": DEFAULT_WINDOW},
                        "seconds of endings counted",
                    )
                ],
                "responses": _responses(_ok("Stats", "Counts, waits and endings"), *STORE),
            }
        },
        "/api/workers": {
            "get": {
                "operationId": "listWorkers",
                "summary": "The live workers",
                "responses": _responses(_ok("Workers", "The live workers"), *STORE),
            }
        },
        "/api/openapi.json": {
            "get": {
                "operationId": "getOpenApi",
                "summary": "This document",
                "responses": _responses(
                    {"200": {"description": "OpenAPI 3.1", "content": _json({"type": "object"})}}
                ),
            }
        },
    }


def document(*, secured: bool = True) -> dict[str, Any]:
    """The document, built anew (callers may change their copy); without the
    bearer requirement when the API is served without a token."""
    spec: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "tenure",
            "version": __version__,
            "description": "A durable task queue: enqueue registered tasks, follow and steer them.",
        },
        "paths": {"/api/tasks": _tasks_path(), **_task_paths(), **_other_paths()},
        "components": {
            "schemas": _schemas(),
            "responses": {f"E{code}": response for code, response in _errors().items()},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
    if secured:
        spec["security"] = [{"bearer": []}]
    return spec
