"""The HTTP API and its OpenAPI document built from tenure's own declarations,
on SQLite and PostgreSQL: a parameter declared once in the route table
(:mod:`tenure.http.surface`) is read, checked and documented; the answers'
schemas derived from the dataclasses the API serialises hold exactly the
properties :mod:`tenure.shapes` writes for real records (schemathesis, in
test_http_api, checks the values of live answers against them), and a
refinement cannot name a field that is not there.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import jsonschema_rs
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from tenure import App, Status
from tenure.errors import TenureError
from tenure.http import create_app
from tenure.http.openapi import NAMED, document
from tenure.http.operations import OPERATIONS
from tenure.http.routes import Api
from tenure.http.schemas import derive, schema_of, text
from tenure.http.server import Answers
from tenure.http.surface import LIST_TASKS, TEXT, Operation, Param
from tenure.shapes import event_json, stats_json, task_json, worker_json
from tenure.store.types import TaskFilter
from tenure.task import Task
from tests.apps.api import make_app, seed


@pytest.fixture
def app(store_url: str) -> Iterator[App]:
    built = make_app(store_url)
    yield built
    built.close()


def _served(app: App, operations: tuple[Operation, ...]) -> TestClient:
    """The API of ``operations`` and its document, refusals answered as
    :func:`~tenure.http.create_app` answers them."""
    routes = Api(app, lambda _: document(operations=operations), operations).routes()
    handlers = {TenureError: Answers(None).tenure_error}
    return TestClient(Starlette(routes=routes, exception_handlers=handlers))


def _with_filter(parameter: Param) -> tuple[Operation, ...]:
    """The API with one parameter more on the listing: the one edit it takes."""
    listing = replace(LIST_TASKS, parameters=(*LIST_TASKS.parameters, parameter))
    return tuple(listing if operation is LIST_TASKS else operation for operation in OPERATIONS)


def test_a_listing_filter_is_one_declaration(app: App) -> None:
    """TaskFilter.text, which the API does not offer, offered by declaring it:
    the server reads and checks it and the store filters by it, and the
    document lists it with its schema."""
    declared = Param("text", TEXT, "only tasks whose description contains this")
    wanted = app.lookup("add").options(description="Monthly REPORT of sums").enqueue(1, 2).id
    app.lookup("add").options(description="daily sums").enqueue(3, 4)
    with TestClient(
        create_app(app, token=None, insecure=True), base_url="http://127.0.0.1"
    ) as before:
        refused = before.get("/api/tasks", params={"text": "report"})
        assert refused.json()["error"]["field"] == "text" and refused.status_code == 422
        listed = before.get("/api/openapi.json").json()["paths"]["/api/tasks"]["get"]
        assert "text" not in {parameter["name"] for parameter in listed["parameters"]}
    with _served(app, _with_filter(declared)) as client:
        found = client.get("/api/tasks", params={"text": "monthly report", "order": "oldest"})
        assert [task["id"] for task in found.json()["tasks"]] == [wanted], found.text
        assert len(client.get("/api/tasks", params={"limit": 5}).json()["tasks"]) == 2
        for bad in ("", "x" * 201, "a\x00b"):
            refused = client.get("/api/tasks", params={"text": bad})
            assert refused.status_code == 422 and refused.json()["error"]["field"] == "text"
        listed = client.get("/api/openapi.json").json()["paths"]["/api/tasks"]["get"]
    described = {parameter["name"]: parameter for parameter in listed["parameters"]}
    assert described["text"] == {
        "name": "text",
        "in": "query",
        "required": False,
        "description": "only tasks whose description contains this",
        "schema": text(),
    }
    assert list(described)[:-1] == [parameter.name for parameter in LIST_TASKS.parameters]


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


def test_a_field_that_may_be_null_takes_null_where_it_lists_its_values(app: App) -> None:
    """A nullable enum (a schedule's task, named among the registered ones)
    lists null among its values: a type that allows null is not enough."""
    signatures = {name: inspect.signature(f.fn) for name, f in app.registry.items()}
    schemas = document(signatures=signatures)["components"]["schemas"]
    validator = jsonschema_rs.Draft202012Validator(
        {"components": {"schemas": schemas}, "$ref": "#/components/schemas/ScheduleChange"}
    )
    assert validator.is_valid({"task": None, "paused": True})
    assert validator.is_valid({"task": "add"}) and not validator.is_valid({"task": "nope"})
    # A new schedule's args and kwargs may be null (left out), where its task takes none.
    new = jsonschema_rs.Draft202012Validator(
        {"components": {"schemas": schemas}, "$ref": "#/components/schemas/NewSchedule"}
    )
    flexible = {"name": "x", "task": "flexible", "every": 5, "args": None, "kwargs": None}
    assert new.is_valid(flexible)
    assert not new.is_valid({**flexible, "task": "add"})  # add needs two arguments
