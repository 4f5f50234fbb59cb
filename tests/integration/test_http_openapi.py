"""The OpenAPI document built from tenure's own declarations, on SQLite and
PostgreSQL: the answers' schemas derived from the dataclasses the API
serialises hold exactly the properties :mod:`tenure.shapes` writes for real
records (schemathesis, in test_http_api, checks the values of live answers
against them), and a refinement cannot name a field that is not there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tenure import App, Status
from tenure.http.openapi import NAMED, document
from tenure.http.schemas import derive, schema_of
from tenure.shapes import event_json, stats_json, task_json, worker_json
from tenure.store.types import TaskFilter
from tenure.task import Task
from tests.apps.api import make_app, seed


@pytest.fixture
def app(store_url: str) -> Iterator[App]:
    built = make_app(store_url)
    yield built
    built.close()


def _properties(schemas: dict[str, Any], name: str) -> set[str]:
    return set(schemas[name]["properties"])


def test_every_answer_has_the_properties_its_schema_derives(app: App) -> None:
    seed(app)  # tasks in every status, with results, errors and leases; a worker
    schemas = document()["components"]["schemas"]
    tasks = app.tasks.page(TaskFilter(), limit=100).tasks
    assert {task.status for task in tasks} == set(Status)
    events = [event_json(event) for task in tasks for event in app.tasks.history(task.id)]
    answers = {
        "Task": [task_json(task) for task in tasks],
        "Event": events,
        "Stats": [stats_json(app.tasks.stats(), 1)],
        "Worker": [worker_json(worker) for worker in app.tasks.workers()],
    }
    for name, written in answers.items():
        assert written, name
        for value in written:
            assert set(value) == _properties(schemas, name), name
            assert schemas[name]["required"] == list(schemas[name]["properties"]), name
    failed = next(task for task in tasks if task.error is not None)
    error = schemas["Task"]["properties"]["error"]
    assert set(task_json(failed)["error"]) == set(error["properties"])
    assert error["type"] == ["object", "null"]


def test_answer_schemas_follow_the_type_hints() -> None:
    task = derive(Task, NAMED)["properties"]
    assert task["status"] == {"$ref": "#/components/schemas/Status"}
    assert task["group_id"] == {"type": ["string", "null"]}
    assert task["tags"] == {"type": "array", "items": {"type": "string"}}
    assert task["run_at"] == {"type": ["string", "null"], "format": "date-time"}
    assert task["data"] == {} and task["attempts"] == {"type": "integer"}
    counts = document()["components"]["schemas"]["Stats"]["properties"]["counts"]
    per_status = counts["additionalProperties"]
    assert per_status["propertyNames"] == {"$ref": "#/components/schemas/Status"}
    assert per_status["additionalProperties"] == {"type": "integer", "minimum": 0}


def test_a_refinement_must_name_a_field() -> None:
    with pytest.raises(TypeError, match="Task has no fields attempt"):
        derive(Task, NAMED, {"attempt": {"minimum": 0}})
    with pytest.raises(TypeError, match="Task has no fields lease"):
        derive(Task, NAMED, rename={"lease": "leased"})
    with pytest.raises(TypeError, match="no JSON schema"):
        schema_of(complex, NAMED)
