"""The HTTP API's table of operations, in the order the document lists them:
the tasks' routes and the schedules' (:mod:`tenure.http.surface`), the
topics' and the workers' (:mod:`tenure.http.topic_surface`). The server
serves it and the document describes it (:mod:`tenure.http.routes`,
:mod:`tenure.http.openapi`).
"""

from __future__ import annotations

from tenure.http.inputs import Param
from tenure.http.schemas import ref
from tenure.http.surface import (
    ENQUEUE,
    LIST_TASKS,
    SCHEDULES,
    SECONDS,
    STORE,
    Operation,
    bulk,
    by_id,
)
from tenure.http.topic_surface import TOPICS, WORKERS
from tenure.store.operating import DEFAULT_WINDOW

OPERATIONS: tuple[Operation, ...] = (
    ENQUEUE,
    LIST_TASKS,
    by_id(
        "GET", "/api/tasks/{id}", "get_task", id="getTask", summary="One task", answer="The task"
    ),
    by_id(
        "GET",
        "/api/tasks/{id}/events",
        "list_task_events",
        "TaskEvents",
        id="listTaskEvents",
        summary="A task's events still in the log, oldest first",
        answer="The task's events",
    ),
    by_id(
        "POST",
        "/api/tasks/{id}/retry",
        "retry_task",
        id="retryTask",
        summary="Send a failed or cancelled task back to pending (a whole id)",
        answer="The task",
    ),
    by_id(
        "POST",
        "/api/tasks/{id}/cancel",
        "cancel_task",
        id="cancelTask",
        summary="Cancel a pending, running or snoozed task (a whole id)",
        answer="The task",
    ),
    Operation(
        "GET",
        "/api/stats",
        id="getStats",
        summary="The queue at a glance",
        handler="get_stats",
        parameters=(Param("window", SECONDS, "seconds of endings counted", DEFAULT_WINDOW),),
        answer="Counts, waits and endings",
        returns=ref("Stats"),
        refusals=STORE,
    ),
    *WORKERS,
    bulk("retry", "Retry", "failed or cancelled ones go back to pending"),
    bulk("cancel", "Cancel", "pending, running or snoozed ones end cancelled"),
    *TOPICS,
    *SCHEDULES,
    Operation(
        "GET",
        "/api/openapi.json",
        id="getOpenApi",
        summary="This document",
        handler="get_openapi",
        answer="OpenAPI 3.1",
        returns={"type": "object"},
    ),
)
"""The API, in the order the document lists it."""
