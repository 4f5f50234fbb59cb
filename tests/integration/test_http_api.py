"""The HTTP API (tenure.http) and ``tenure serve``, on SQLite and PostgreSQL.

Each route's success and its refusals, the token in front of every route, and
the answers fuzzing rarely reaches checked against the served OpenAPI document
by schemathesis (test_api_fuzzing runs its every check against a live server).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest.mock import patch

import httpx
import pytest
import schemathesis
from schemathesis import checks
from starlette.testclient import TestClient

from tenure import App, Status
from tenure.cli import serve as cli_serve
from tenure.errors import ConfigError, StoreError
from tenure.http import create_app
from tenure.http import routes as routes_module
from tenure.store.types import WorkerInfo
from tests.apps.api import make_app, seed
from tests.conformance.support import reach

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ROOT = Path(__file__).resolve().parents[2]

ROUTES = ["GET /api/openapi.json", "POST /api/tasks", "GET /api/tasks", "GET /api/tasks/{id}",
          "GET /api/tasks/{id}/events", "POST /api/tasks/{id}/retry",
          "POST /api/tasks/{id}/cancel", "GET /api/stats", "GET /api/workers",
          "POST /api/tasks/retry", "POST /api/tasks/cancel", "GET /api/topics/paused",
          "POST /api/topics/pause", "POST /api/topics/resume", "GET /api/topics/limits",
          "POST /api/topics/limit", "GET /api/topics/rates", "POST /api/topics/rate",
          "GET /api/topics/ageing", "POST /api/topics/ageing", "POST /api/workers/scale",
          "GET /api/schedules",
          "POST /api/schedules", "GET /api/schedules/{name}",
          "PATCH /api/schedules/{name}", "DELETE /api/schedules/{name}"]  # fmt: skip


@pytest.fixture
def app(store_url: str) -> Iterator[App]:
    built = make_app(store_url)
    yield built
    built.close()


@pytest.fixture
def client(app: App) -> Iterator[TestClient]:
    with TestClient(create_app(app, token=TOKEN), headers=AUTH) as opened:
        yield opened


def refusal(response: httpx.Response) -> tuple[int, str | None]:
    """A refusal's status and the field it names (asserting the error shape)."""
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"field", "message"}, body
    assert body["error"]["message"], body
    return response.status_code, body["error"]["field"]


def send(
    client: TestClient, body: object = None, raw: bytes = b"", media: str = ""
) -> httpx.Response:
    """``POST /api/tasks`` of ``body`` as JSON, or of ``raw`` bytes, as ``media``."""
    content = raw or json.dumps(body).encode()
    return client.post("/api/tasks", content=content,
                       headers={"Content-Type": media or "application/json"})  # fmt: skip


def enqueue(client: TestClient, name: str = "add", **fields: Any) -> dict[str, Any]:
    response = send(client, {"name": name, "args": [1, 2], **fields})
    assert response.status_code == 201, response.text
    task: dict[str, Any] = response.json()
    return task


def test_enqueue_takes_topic_and_retries_from_the_declaration(client: TestClient) -> None:
    options = {"priority": 7, "group": "batch-1", "sub_topic": "eu", "description": "why"}
    response = send(client, {"name": "add", "args": [1], "kwargs": {"b": 2}, "options": options})
    task = response.json()
    assert response.status_code == 201 and response.headers["Cache-Control"] == "no-store"
    assert response.headers["Location"] == f"/api/tasks/{task['id']}"
    expected = {"name": "add", "topic": "math", "status": "pending", "max_attempts": 3,
                "timeout": 30.0, "priority": 7, "group_id": "batch-1", "sub_topic": "eu",
                "description": "why", "data": {"args": [1], "kwargs": {"b": 2}}}  # fmt: skip
    assert {field: task[field] for field in expected} == expected
    assert client.get(response.headers["Location"]).json() == task


def test_enqueue_defaults_and_chosen_id_and_delay(client: TestClient) -> None:
    mail = enqueue(client, "send-email", args=["ada@example.com"], kwargs={"urgent": True})
    assert (mail["topic"], mail["sub_topic"], mail["priority"]) == ("mail", "transactional", 3)
    later = enqueue(client, options={"id": "nightly:2026-11-23", "delay": 3600, "priority": None})
    assert later["id"] == "nightly:2026-11-23" and later["priority"] == 0
    run_at = datetime.fromisoformat(later["run_at"])
    assert run_at > datetime.now(UTC) + timedelta(minutes=59)
    assert refusal(send(client, _add(id="nightly:2026-11-23"))) == (409, "options.id")


def _add(**options: object) -> dict[str, object]:
    return {"name": "add", "args": [1, 2], "options": options}


# fmt: off
BAD_BODIES: list[tuple[object, int, str | None]] = [
    ({"name": "no-such-task"}, 404, "name"), ([], 422, "body"), (["add"], 422, "body"),
    ("add", 422, "body"), (42, 422, "body"), (None, 422, "body"), ({}, 422, "name"),
    ({"name": 5}, 422, "name"), ({"name": ""}, 422, "name"),
    ({"name": "add", "kwarg": {}}, 422, "kwarg"), ({"name": "add", "args": {"a": 1}}, 422, "args"),
    ({"name": "add", "args": "1, 2"}, 422, "args"), ({"name": "add", "args": [1]}, 422, "args"),
    ({"name": "add", "args": [1, 2, 3]}, 422, "args"),
    ({"name": "add", "kwargs": [1, 2]}, 422, "kwargs"),
    ({"name": "send-email", "args": ["a"], "kwargs": {"bcc": "b"}}, 422, "kwargs.bcc"),
    ({"name": "flexible", "args": ["nul \x00 inside"]}, 422, "args"),
    ({"name": "add", "options": []}, 422, "options"),
    (_add(retries=3), 422, "options.retries"), (_add(delay=-1), 422, "options.delay"),
    (_add(delay="soon"), 422, "options.delay"), (_add(priority=1.5), 422, "options.priority"),
    (_add(priority=2**31), 422, "options.priority"), (_add(priority=True), 422, "options.priority"),
    (_add(group=""), 422, "options.group"), (_add(sub_topic=3), 422, "options.sub_topic"),
    (_add(description="x" * 2001), 422, "options.description"),
    (_add(id="a/b"), 422, "options.id"),
]
# fmt: on


def test_enqueue_refuses_bad_bodies_naming_the_field(client: TestClient) -> None:
    for body, status, field in BAD_BODIES:
        response = send(client, body)
        assert refusal(response) == (status, field), (body, response.json())
    assert client.get("/api/tasks").json()["tasks"] == []  # nothing was stored


def test_enqueue_refuses_what_is_not_json(client: TestClient, app: App) -> None:
    def post(content: bytes, media: str = "") -> tuple[int, str | None]:
        return refusal(send(client, raw=content, media=media))

    assert post(b'{"name": "add",') == (400, "body")
    assert post(b" ") == (400, "body")
    assert post(b'{"name": "flexible", "args": [NaN]}') == (400, "body")
    assert post(b'{"name": "flexible", "args": [1e400]}') == (422, "args[0]")
    assert post(b'{"name": "flexible", "args": ["\\ud800"]}') == (422, "args")
    assert post(b'{"name": "\xff"}') == (400, "body")
    assert post(b"[" * 100_000 + b"]" * 100_000) == (400, "body")
    assert post(b'{"name": "add"}', "application/x-www-form-urlencoded") == (415, "Content-Type")
    huge = json.dumps({"name": "flexible", "args": ["x" * (app.max_payload_bytes * 4 + 70_000)]})
    assert post(huge.encode()) == (413, "body")
    over = json.dumps({"name": "flexible", "args": ["x" * (app.max_payload_bytes + 10)]})
    assert post(over.encode()) == (422, "body")  # not too large to read: the store measures it
    escaped = json.dumps({"name": "flexible", "args": ["é" * (app.max_payload_bytes // 2 - 99)]})
    assert send(client, raw=escaped.encode()).status_code == 201  # 3 MiB sent, 1 MiB kept
    ok = send(client, {"name": "flexible"}, media="application/json; charset=utf-8")
    assert ok.status_code == 201


def test_unique_tasks_conflict_with_409(client: TestClient) -> None:
    enqueue(client, "nightly-report", args=["2026-11-23"])
    assert refusal(send(client, {"name": "nightly-report", "args": ["2026-11-23"]})) == (409, None)
    enqueue(client, "exclusive-sync", args=["crm"])
    raised = send(client, {"name": "exclusive-sync", "args": ["crm"]})
    assert refusal(raised) == (409, None)
    assert "held by" in raised.json()["error"]["message"]


def test_get_a_task_by_id_or_unique_prefix(client: TestClient) -> None:
    task = enqueue(client)
    assert client.get(f"/api/tasks/{task['id']}").json() == task
    assert client.get(f"/api/tasks/{task['id'][:20]}").json() == task
    assert refusal(client.get("/api/tasks/no-such-task")) == (404, "id")
    assert refusal(client.get("/api/tasks/" + "x" * 201)) == (422, "id")
    assert refusal(client.get(f"/api/tasks/{task['id']}?verbose=1")) == (422, "verbose")
    for suffix in "12":
        enqueue(client, options={"id": f"twin-{suffix}"})
    assert refusal(client.get("/api/tasks/twin-")) == (409, "id")
    assert client.get("/api/tasks/twin-2").json()["id"] == "twin-2"


def test_a_task_answers_with_its_progress(client: TestClient, app: App) -> None:
    task, lease = reach(app.store, Status.RUNNING)
    assert lease is not None
    app.store.task_progress(lease, 0.4, "step 2 of 5")
    shown = client.get(f"/api/tasks/{task.id}").json()
    assert (shown["progress"], shown["progress_note"]) == (0.4, "step 2 of 5")
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]["Task"]
    assert {"progress", "progress_note"} <= schema["properties"].keys()


def test_list_filters_orders_and_pages(client: TestClient) -> None:
    ids = [enqueue(client, options={"group": "g1" if i % 2 else "g2"})["id"] for i in range(5)]
    mail = enqueue(client, "send-email", args=["ada@example.com"])
    client.post(f"/api/tasks/{ids[0]}/cancel")
    listed = client.get("/api/tasks").json()
    assert [t["id"] for t in listed["tasks"]] == [mail["id"], *reversed(ids)]
    assert listed["cursor"] is None
    oldest = client.get("/api/tasks", params={"order": "oldest", "topic": "math"}).json()
    assert [t["id"] for t in oldest["tasks"]] == ids
    assert _ids(client, status="cancelled") == [ids[0]]
    assert _ids(client, group="g1", order="oldest") == [ids[1], ids[3]]
    assert _ids(client, name="send-email", sub_topic="transactional") == [mail["id"]]
    assert (
        _ids(client, created_from="2000-01-01T00:00:00Z", created_to="2000-01-02T00:00:00Z") == []
    )
    assert len(_ids(client, created_from="2000-01-01T00:00:00+02:00")) == 6
    first = client.get("/api/tasks?limit=4").json()
    second = client.get("/api/tasks", params={"limit": 4, "cursor": first["cursor"]}).json()
    assert [t["id"] for t in first["tasks"] + second["tasks"]] == [mail["id"], *reversed(ids)]
    assert second["cursor"] is None


def _ids(client: TestClient, **params: str) -> list[str]:
    response = client.get("/api/tasks", params=params)
    assert response.status_code == 200, response.text
    return [task["id"] for task in response.json()["tasks"]]


# fmt: off
BAD_QUERIES = {
    "limit=0": "limit", "limit=1001": "limit", "limit=ten": "limit", "limit=1_0": "limit",
    "status=lost": "status", "order=sideways": "order", "topic=": "topic",
    "created_from=yesterday": "created_from", "created_from=2026-11-23": "created_from",
    "created_to=2026-11-23T08:00:00": "created_to", "created_to=2026-13-23T08:00:00Z": "created_to",
    "created_from=0001-01-01T00:00:00%2B23:59": "created_from", "cursor=garbage": "cursor",
    "stauts=failed": "stauts", "status=failed&status=done": "status",
}
# fmt: on


def test_list_refuses_bad_parameters_naming_them(client: TestClient) -> None:
    for query, field in BAD_QUERIES.items():
        assert refusal(client.get(f"/api/tasks?{query}")) == (422, field), query
    enqueue(client)
    enqueue(client)
    cursor = client.get("/api/tasks?limit=1").json()["cursor"]
    assert cursor is not None
    other_order = client.get(f"/api/tasks?limit=1&order=oldest&cursor={cursor}")
    assert refusal(other_order) == (422, "cursor")


def test_events_of_a_task_oldest_first(client: TestClient) -> None:
    task = enqueue(client)
    client.post(f"/api/tasks/{task['id']}/cancel")
    client.post(f"/api/tasks/{task['id']}/retry")
    answer = client.get(f"/api/tasks/{task['id'][:24]}/events").json()
    assert answer["task_id"] == task["id"]
    kinds = [(e["kind"], e["from"], e["to"]) for e in answer["events"]]
    assert kinds == [("created", None, "pending"), ("cancelled", "pending", "cancelled"),
                     ("pending", "cancelled", "pending")]  # fmt: skip
    assert refusal(client.get("/api/tasks/nope/events")) == (404, "id")


def test_cancel_and_retry_follow_the_status_table(client: TestClient, app: App) -> None:
    task = enqueue(client)
    cancelled = client.post(f"/api/tasks/{task['id']}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert refusal(client.post(f"/api/tasks/{task['id']}/cancel")) == (409, "status")
    retried = client.post(f"/api/tasks/{task['id']}/retry")
    assert retried.status_code == 200 and retried.json()["status"] == "pending"
    assert refusal(client.post(f"/api/tasks/{task['id']}/retry")) == (409, "status")
    done, _ = reach(app.store, Status.DONE)
    assert refusal(client.post(f"/api/tasks/{done.id}/retry")) == (409, "status")
    assert refusal(client.post(f"/api/tasks/{done.id}/cancel")) == (409, "status")
    failed, _ = reach(app.store, Status.FAILED)
    assert client.post(f"/api/tasks/{failed.id}/retry").json()["status"] == "pending"
    assert refusal(client.post("/api/tasks/no-such-task/retry")) == (404, "id")
    # Writes take whole ids only: a prefix never changes a task.
    assert refusal(client.post(f"/api/tasks/{task['id'][:20]}/cancel")) == (404, "id")
    assert client.get(f"/api/tasks/{task['id']}").json()["status"] == "pending"


def test_writes_are_post_only(client: TestClient) -> None:
    tid = enqueue(client)["id"]
    for method, path in [("GET", f"/api/tasks/{tid}/retry"), ("GET", f"/api/tasks/{tid}/cancel"),
                         ("DELETE", f"/api/tasks/{tid}"), ("PATCH", f"/api/tasks/{tid}"),
                         ("PUT", "/api/tasks"), ("POST", "/api/stats")]:  # fmt: skip
        response = client.request(method, path)
        assert refusal(response) == (405, "method"), (method, path)
        assert "Allow" in response.headers
    assert client.get(f"/api/tasks/{tid}").json()["status"] == "pending"
    # A fixed path is not taken for a task's: its 405 names its own methods.
    for action in ("retry", "cancel"):
        response = client.request("OPTIONS", f"/api/tasks/{action}")
        assert refusal(response) == (405, "method")
        assert response.headers["Allow"] == "POST"
    assert refusal(client.get("/api/nothing-here")) == (404, "path")


def test_stats_and_workers(client: TestClient, app: App) -> None:
    enqueue(client)
    enqueue(client)
    reach(app.store, Status.DONE)
    app.store.worker_beat(WorkerInfo(id="w-1", host="box", pid=42, topics=("math",)))
    stats = client.get("/api/stats").json()
    assert stats["counts"]["math"] == {"pending": 2}
    assert stats["endings"]["reach-done"] == {"done": 1}
    assert set(stats["oldest_pending"]) == {"math"}
    assert stats["workers_alive"] == 1
    for good in ("60", "0.3333333333333333", "1.5e2", "86400.000000000000001"):
        assert client.get(f"/api/stats?window={good}").status_code == 200, good
    for bad in ("0", "-5", "soon", "nan", "1e30"):
        assert refusal(client.get(f"/api/stats?window={bad}")) == (422, "window"), bad
    [worker] = client.get("/api/workers").json()["workers"]
    assert worker | {"started_at": None, "last_seen": None} == {
        "id": "w-1", "host": "box", "pid": 42, "topics": ["math"], "tags": [], "pool": "threads",
        "concurrency": 1, "held": 0, "started_at": None, "last_seen": None,
        "scale_to": None}  # fmt: skip
    assert worker["last_seen"] is not None


def test_an_unreachable_store_is_a_503() -> None:
    down = make_app("postgresql://postgres@127.0.0.1:1/tenure")
    with TestClient(create_app(down, token=TOKEN), headers=AUTH) as client:
        for method, path in [("GET", "/api/tasks"), ("GET", "/api/stats")]:
            response = client.request(method, path)
            assert refusal(response) == (503, None)
            assert response.headers["Retry-After"] == "5"
            assert "127.0.0.1:1" not in response.text  # details go to the log only
        posted = client.post("/api/tasks", json={"name": "add", "args": [1, 2]})
        assert refusal(posted) == (503, None)
        assert client.get("/api/openapi.json").status_code == 200  # needs no store


def test_metrics_stay_up_while_the_store_is_down_and_say_so() -> None:
    """The scrape succeeds (the target stays up) with ``tenure_store_up 0`` and
    nothing else: an alert fires on the gauge, not on a failed scrape."""
    down = make_app("postgresql://postgres@127.0.0.1:1/tenure")
    with TestClient(create_app(down, token=TOKEN), headers=AUTH) as client:
        scraped = client.get("/metrics")
    assert scraped.status_code == 200
    samples = [line for line in scraped.text.splitlines() if not line.startswith("#")]
    assert samples == ["tenure_store_up 0.0"]


def test_metrics_speak_openmetrics_to_a_scraper_that_asks(client: TestClient) -> None:
    plain = client.get("/metrics")
    assert plain.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert "tenure_store_up 1.0" in plain.text.splitlines()
    accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
    open_metrics = client.get("/metrics", headers={"Accept": accept})
    assert open_metrics.headers["content-type"].startswith("application/openmetrics-text")
    assert open_metrics.text.endswith("# EOF\n")
    assert "tenure_store_up 1.0" in open_metrics.text.splitlines()
    assert "_created" not in open_metrics.text


def test_failures_are_500s_without_details(
    app: App, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def store_error(*_: object, **__: object) -> None:
        raise StoreError("secret detail")

    monkeypatch.setattr(type(app.store), "task_stats", store_error)
    monkeypatch.setattr(type(app.store), "worker_list", lambda *_: 1 / 0)  # a bug
    asgi = create_app(app, token=TOKEN)
    with TestClient(asgi, headers=AUTH, raise_server_exceptions=False) as client:
        stats = client.get("/api/stats")
        assert refusal(stats) == (500, None) and "secret" not in stats.text
        assert refusal(client.get("/api/workers")) == (500, None)
    assert any("secret detail" in str(record.exc_info) for record in caplog.records)


WRONG_TOKENS = [None, "Bearer wrong-token-0123456789", f"Bearer {TOKEN}x", f"Basic {TOKEN}",
                TOKEN, "Bearer", "Bearer é".encode(), f"Bearer  {TOKEN[:-1]}"]  # fmt: skip


def test_every_route_needs_the_token_unless_insecure(app: App) -> None:
    with TestClient(create_app(app, token=TOKEN)) as client:
        for route in ROUTES:
            method, path = route.replace("{id}", "some-id").split()
            for value in WRONG_TOKENS:
                headers = {} if value is None else {"Authorization": value}
                response = client.request(method, path, headers=headers)
                assert refusal(response) == (401, "Authorization"), (method, path, headers)
                assert response.headers["WWW-Authenticate"].startswith("Bearer")
                assert TOKEN not in response.text
            answer = client.request(method, path, headers={"authorization": f"bearer {TOKEN}"})
            assert answer.status_code != 401, (method, path)
        twice = [("Authorization", f"Bearer {TOKEN}"), ("Authorization", "Bearer other")]
        assert client.get("/api/stats", headers=httpx.Headers(twice)).status_code == 401
    unguarded = create_app(app, token=None, insecure=True)
    with TestClient(unguarded, base_url="http://127.0.0.1:8765") as client:  # no token asked
        assert client.get("/api/stats").status_code == 200
        assert "security" not in client.get("/api/openapi.json").json()
        # A name that merely resolves to this machine (DNS rebinding) is refused.
        assert client.get("/api/stats", headers={"Host": "evil.example"}).status_code == 400
        assert client.get("/", headers={"Host": "evil.example:8765"}).status_code == 400


@pytest.mark.parametrize(
    ("token", "insecure"),
    [(None, False), ("short", False), ("has a space in it!!", False), (TOKEN, True), ("", False)],
)
def test_create_app_refuses_weak_or_missing_tokens(
    app: App, token: str | None, insecure: bool
) -> None:
    with pytest.raises(ConfigError) as refused:
        create_app(app, token=token, insecure=insecure)
    assert token is None or token == "" or token not in str(refused.value)


CONFORMANCE = [checks.not_a_server_error, checks.status_code_conformance,
               checks.content_type_conformance, checks.response_headers_conformance,
               checks.response_schema_conformance]  # fmt: skip


def test_every_documented_answer_matches_the_document(app: App) -> None:
    """The answers fuzzing rarely reaches (an enqueue of a registered task, a
    found task, a refused change), each checked against the document."""
    seed(app)
    schema = schemathesis.openapi.from_asgi(
        "/api/openapi.json", create_app(app, token=TOKEN), headers=AUTH
    )

    def call(method: str, path: str, **parts: Any) -> Any:
        case = schema[path][method].Case(**parts)
        return case.call_and_validate(headers=AUTH, checks=CONFORMANCE)

    body = {"name": "send-email", "args": ["ada@example.com"], "options": {"group": "g"}}
    created = call("POST", "/api/tasks", body=body, media_type="application/json")
    assert created.status_code == 201
    task_id = created.json()["id"]
    assert call("POST", "/api/tasks", body={"name": "nope"}).status_code == 404
    assert call("POST", "/api/tasks", body={"name": "add", "args": [1]}).status_code == 422
    dup = {"name": "add", "args": [1, 2], "options": {"id": task_id}}
    assert call("POST", "/api/tasks", body=dup).status_code == 409
    one = {"path_parameters": {"id": task_id}}
    prefix = {"path_parameters": {"id": task_id[:20]}}
    assert call("GET", "/api/tasks/{id}", **prefix).status_code == 200
    assert call("GET", "/api/tasks/{id}/events", **one).status_code == 200
    assert call("POST", "/api/tasks/{id}/cancel", **one).status_code == 200
    assert call("POST", "/api/tasks/{id}/cancel", **one).status_code == 409
    assert call("POST", "/api/tasks/{id}/retry", **one).status_code == 200
    assert call("POST", "/api/tasks/{id}/retry", path_parameters={"id": "x"}).status_code == 404
    for query in ({}, {"status": "failed"}, {"order": "oldest", "limit": 2}, {"group": "seeded"}):
        assert call("GET", "/api/tasks", query=query).status_code == 200
    assert call("GET", "/api/tasks", query={"limit": 0}).status_code == 422
    assert call("GET", "/api/stats", query={"window": 60}).status_code == 200
    assert call("GET", "/api/workers").json()["workers"][0]["id"] == "w-1"
    added = {"name": "sums", "task": "add", "every": 60, "args": [1, 2]}
    assert call("POST", "/api/schedules", body=added).status_code == 201
    assert call("POST", "/api/schedules", body=added).status_code == 409
    assert (
        call("POST", "/api/schedules", body={**added, "name": "x", "task": "nope"}).status_code
        == 422
    )
    assert call("GET", "/api/schedules").json()["schedules"][0]["name"] == "seeded-sums"
    sums = {"path_parameters": {"name": "sums"}}
    assert call("GET", "/api/schedules/{name}", **sums).json()["every"] == 60
    edit = {"cron": "0 9 * * *", "tz": "Europe/Berlin", "paused": True}
    assert call("PATCH", "/api/schedules/{name}", body=edit, **sums).json()["paused"] is True
    assert call("DELETE", "/api/schedules/{name}", **sums).json() == {
        "name": "sums",
        "removed": True,
    }
    assert call("DELETE", "/api/schedules/{name}", **sums).status_code == 404
    assert call("GET", "/api/openapi.json").json()["openapi"] == "3.1.0"


def _serve_args(**overrides: Any) -> argparse.Namespace:
    values = {"app": "tests.apps.api:app", "host": "127.0.0.1", "port": 0, "insecure": False,
              "url": None, "log_level": "info", "log_format": "text", "root_path": ""}  # fmt: skip
    return argparse.Namespace(**(values | overrides))


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com"])
def test_insecure_is_refused_off_loopback(host: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_serve.serve(_serve_args(host=host, insecure=True)) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "--insecure" in lines[0] and host in lines[0]
    assert not cli_serve.is_loopback(host)
    assert all(map(cli_serve.is_loopback, ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"]))


def test_a_weak_token_in_the_environment_is_refused_without_showing_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(cli_serve.TOKEN_VARIABLE, "hunter2")
    assert cli_serve.serve(_serve_args()) == 2
    err = capsys.readouterr().err
    assert cli_serve.TOKEN_VARIABLE in err and "hunter2" not in err


def test_an_address_in_use_is_one_line(app: App) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{busy}"):
            cli_serve.build_server(create_app(app, token=TOKEN), _serve_args(port=busy))


@pytest.mark.timeout(60)
def test_serve_prints_a_new_token_once_and_never_logs_it(tmp_path: Path) -> None:
    """The whole command in a process: a token made and printed once, the API
    behind it, uvicorn's access lines without the Authorization header."""
    url = f"sqlite:///{tmp_path / 'served.db'}"
    env = {k: v for k, v in os.environ.items() if k != cli_serve.TOKEN_VARIABLE}
    command = [sys.executable, "-m", "tenure", "serve", "--app", "tests.apps.api:app",
               "--port", "0", "--url", url]  # fmt: skip
    with subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True) as server:
        assert server.stderr is not None
        seen = [server.stderr.readline()]
        while seen[-1] and "HTTP API of" not in seen[-1]:
            seen.append(server.stderr.readline())
        token = re.search(r"choose one\): (\S+)$", seen[0].strip())
        port = re.search(r"http://127\.0\.0\.1:(\d+)/api", seen[-1])
        try:
            assert token and port, "".join(seen)
            base, auth = f"http://127.0.0.1:{port[1]}/api", {"Authorization": f"Bearer {token[1]}"}
            posted = httpx.post(f"{base}/tasks", json={"name": "add", "args": [1, 2]}, headers=auth)
            assert posted.status_code == 201
            assert httpx.get(f"{base}/tasks?limit=5", headers=auth).json()["tasks"][0]["id"]
            assert httpx.get(f"{base}/stats").status_code == 401
        finally:
            server.send_signal(signal.SIGTERM)
            output = "".join(seen) + server.communicate(timeout=20)[1]
    assert server.returncode == 0, output
    assert output.count(token[1]) == 1, output  # the one print, and nothing else
    assert '"POST /api/tasks HTTP/1.1" 201' in output
    assert '"GET /api/tasks?limit=5 HTTP/1.1" 200' in output
    assert '"GET /api/stats HTTP/1.1" 401' in output


def test_schedules_are_added_edited_paused_and_removed_over_http(
    app: App, client: TestClient
) -> None:
    app.periodic(3600, args=(1, 2), name="declared")(app.lookup("add"))
    body = {"name": "mail", "task": "send-email", "cron": "0 9 * * 1-5", "tz": "Europe/Berlin",
            "args": ["ada@example.com"], "kwargs": {"urgent": True}, "catch_up": 60}  # fmt: skip
    added = client.post("/api/schedules", json=body)
    assert added.status_code == 201 and added.headers["location"].endswith("/api/schedules/mail")
    shown = added.json()
    assert (shown["origin"], shown["describe"], shown["paused"]) == (
        "store", "0 9 * * 1-5 (Europe/Berlin)", False
    )  # fmt: skip
    # An interval replaces the cron expression and its zone.
    edited = client.patch("/api/schedules/mail", json={"every": 300, "paused": True}).json()
    assert (edited["cron"], edited["every"], edited["tz"], edited["paused"]) == (
        None, 300, None, True
    )  # fmt: skip
    assert edited["next_tick"] is None
    names = [s["name"] for s in client.get("/api/schedules").json()["schedules"]]
    assert names == ["declared", "mail"]
    # A declared schedule can be paused, not changed or removed.
    assert client.patch("/api/schedules/declared", json={"paused": True}).json()["paused"]
    refused = client.patch("/api/schedules/declared", json={"every": 60})
    assert refused.status_code == 409 and "declared in code" in refused.text
    assert client.delete("/api/schedules/declared").status_code == 409
    assert client.delete("/api/schedules/mail").status_code == 200
    assert client.get("/api/schedules/mail").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "task": "add", "args": [1, 2]}, "cron"),
        ({"name": "x", "task": "add", "cron": "* * * * *", "every": 5}, "every"),
        ({"name": "x", "task": "add", "cron": "not cron"}, "cron"),
        ({"name": "x", "task": "add", "every": 0.5}, "every"),
        ({"name": "a/b", "task": "add", "every": 5}, "name"),
        ({"name": "x", "task": "nope", "every": 5}, "task"),
        ({"name": "x", "task": "add", "every": 5, "args": [1]}, "args"),
        ({"name": "x", "task": "add", "every": 5, "tz": "Europe/Berlin"}, "spec.tz"),
        ({"name": "x", "task": "add", "every": 5, "when": 1}, "when"),
        ({"task": "add", "every": 5}, "name"),
    ],
)
def test_a_bad_schedule_is_refused_naming_its_field(
    app: App, client: TestClient, body: dict[str, Any], field: str
) -> None:
    refused = client.post("/api/schedules", json=body)
    assert refused.status_code == 422 and refused.json()["error"]["field"] == field
    assert app.store.schedule_list() == []


def test_an_enqueue_gives_a_deadline(app: App, client: TestClient) -> None:
    task = enqueue(client, options={"expires": 30})
    stored = app.store.task_get(task["id"])
    assert stored is not None and task["expires_at"] == stored.expires_at.isoformat()  # type: ignore[union-attr]
    assert stored is not None and stored.expires_at is not None
    assert (stored.expires_at - stored.created_at).total_seconds() == 30  # type: ignore[operator]
    for wrong in (0, -5, "soon", True):
        refused = send(client, {"name": "add", "args": [1, 2], "options": {"expires": wrong}})
        assert refusal(refused) == (422, "options.expires"), wrong


def test_a_topic_is_paused_listed_and_resumed(app: App, client: TestClient) -> None:
    assert client.get("/api/topics/paused").json() == {"paused": []}
    paused = client.post("/api/topics/pause", json={"topic": "mail"})
    assert paused.status_code == 200 and paused.json()["topic"] == "mail"
    assert [p.topic for p in app.store.topics_paused()] == ["mail"]
    listed = client.get("/api/topics/paused").json()["paused"]
    assert listed == [paused.json()]
    assert client.post("/api/topics/resume", json={"topic": "mail"}).json() == {
        "topic": "mail", "resumed": True
    }  # fmt: skip
    again = client.post("/api/topics/resume", json={"topic": "mail"}).json()
    assert again["resumed"] is False and app.store.topics_paused() == []
    for body, field in [({}, "topic"), ({"topic": ""}, "topic"), ({"topic": 5}, "topic"),
                        ({"topic": "a", "x": 1}, "x")]:  # fmt: skip
        assert refusal(client.post("/api/topics/pause", json=body)) == (422, field)
    assert app.store.topics_paused() == []


def test_a_topics_limit_is_set_listed_and_lifted(app: App, client: TestClient) -> None:
    assert client.get("/api/topics/limits").json() == {"limits": []}
    set_ = client.post("/api/topics/limit", json={"topic": "mail", "max_running": 3})
    assert set_.status_code == 200 and set_.json()["set_at"]
    assert set_.json() | {"set_at": None} == {"topic": "mail", "max_running": 3, "set_at": None}
    [listed] = client.get("/api/topics/limits").json()["limits"]
    assert (listed["topic"], listed["max_running"]) == ("mail", 3) and listed["set_at"]
    assert [(lim.topic, lim.max_running) for lim in app.store.topic_limits()] == [("mail", 3)]
    lifted = client.post("/api/topics/limit", json={"topic": "mail", "max_running": None})
    assert lifted.json() == {"topic": "mail", "max_running": None, "set_at": None}
    assert app.store.topic_limits() == []
    for body, field in [({"topic": "mail"}, "max_running"), ({"max_running": 2}, "topic"),
                        ({"topic": "mail", "max_running": 0}, "max_running"),
                        ({"topic": "mail", "max_running": 2.5}, "max_running"),
                        ({"topic": "mail", "max_running": True}, "max_running"),
                        ({"topic": "", "max_running": 2}, "topic"),
                        ({"topic": None, "max_running": 2}, "topic")]:  # fmt: skip
        assert refusal(client.post("/api/topics/limit", json=body)) == (422, field), body
    assert app.store.topic_limits() == []


def test_a_topics_rate_and_ageing_are_set_listed_and_lifted(app: App, client: TestClient) -> None:
    set_ = client.post("/api/topics/rate", json={"topic": "mail", "max_starts": 100})
    assert set_.json() | {"set_at": None} == {
        "topic": "mail", "max_starts": 100, "per_seconds": 60.0, "set_at": None
    } and set_.json()["set_at"]  # fmt: skip
    [rate] = client.get("/api/topics/rates").json()["rates"]
    assert (rate["topic"], rate["max_starts"], rate["per_seconds"]) == ("mail", 100, 60.0)
    aged = client.post("/api/topics/ageing", json={"topic": "reports", "every_seconds": 30})
    assert aged.json() | {"set_at": None} == {
        "topic": "reports", "every_seconds": 30.0, "most": 10, "set_at": None
    }  # fmt: skip
    [listed] = client.get("/api/topics/ageing").json()["ageing"]
    assert (listed["topic"], listed["every_seconds"], listed["most"]) == ("reports", 30.0, 10)
    assert [a.most for a in app.store.topic_ageings()] == [10]
    lifted = client.post("/api/topics/rate", json={"topic": "mail", "max_starts": None}).json()
    assert lifted == {"topic": "mail", "max_starts": None, "per_seconds": None, "set_at": None}
    off = client.post("/api/topics/ageing", json={"topic": "reports", "every_seconds": None})
    assert off.json() == {"topic": "reports", "every_seconds": None, "most": None, "set_at": None}
    assert app.store.topic_rates() == [] and app.store.topic_ageings() == []
    for path, body, field in [
        ("rate", {"topic": "mail"}, "max_starts"),
        ("rate", {"topic": "mail", "max_starts": 5, "per_seconds": 0}, "per_seconds"),
        ("rate", {"topic": "mail", "max_starts": 0}, "max_starts"),
        ("ageing", {"topic": "r"}, "every_seconds"),
        ("ageing", {"topic": "r", "every_seconds": -1}, "every_seconds"),
        ("ageing", {"topic": "r", "every_seconds": 1e-300}, "every_seconds"),
        ("ageing", {"topic": "r", "every_seconds": 60, "most": 0}, "most"),
        ("ageing", {"every_seconds": 60}, "topic"),
    ]:
        assert refusal(client.post(f"/api/topics/{path}", json=body)) == (422, field), body
    assert app.store.topic_rates() == [] and app.store.topic_ageings() == []


def test_a_change_that_does_not_fit_the_stored_schedule_is_a_conflict(
    app: App, client: TestClient
) -> None:
    added = {"name": "sums", "task": "add", "args": [1, 2], "every": 60}
    assert client.post("/api/schedules", json=added).status_code == 201
    # Each is right alone, and wrong for this schedule: 409, naming what was given.
    for change, field in [({"args": [1]}, "args"), ({"tz": "Europe/Berlin"}, "tz"),
                          ({"task": "nightly-report"}, "args")]:  # fmt: skip
        refused = client.patch("/api/schedules/sums", json=change)
        assert refused.status_code == 409 and refused.json()["error"]["field"] == field, change
    # Wrong whatever the schedule holds: 422.
    wrong = [({"tz": "posixrules"}, "tz"), ({"every": 60, "tz": "UTC"}, "tz"),
             ({"cron": "0 0 30 2 *"}, "cron"), ({"task": "nope"}, "task")]  # fmt: skip
    for change, field in wrong:
        refused = client.patch("/api/schedules/sums", json=change)
        assert refused.status_code == 422 and refused.json()["error"]["field"] == field, change
    [kept] = app.store.schedule_list()
    assert (kept.spec.args, kept.spec.schedule, kept.spec.tz) == ((1, 2), 60.0, None)


def test_bulk_retry_and_cancel_by_ids_or_filter_bounded_with_a_dry_run(
    app: App, client: TestClient
) -> None:
    failed = [reach(app.store, Status.FAILED, group_id="emails")[0] for _ in range(3)]
    other, _ = reach(app.store, Status.FAILED, group_id="reports")
    pending = app.lookup("add").enqueue(1, 2).task
    assert pending is not None
    by_filter = {"filter": {"status": "failed", "group": "emails"}}
    dry = client.post("/api/tasks/retry", json={**by_filter, "dry_run": True}).json()
    assert dry["matched"] == [t.id for t in failed] and dry["changed"] == []
    assert {app.store.task_get(t.id).status for t in failed} == {Status.FAILED}  # type: ignore[union-attr]
    done = client.post("/api/tasks/retry", json=by_filter).json()
    assert [t["id"] for t in done["changed"]] == [t.id for t in failed] and done["refused"] == []
    assert app.store.task_get(other.id).status is Status.FAILED  # type: ignore[union-attr]
    # By ids: each is tried; those whose status forbids it are named, with why.
    ids = [pending.id, other.id, "no-such-task"]
    mixed = client.post("/api/tasks/cancel", json={"ids": ids}).json()
    assert [t["id"] for t in mixed["changed"]] == [pending.id]
    assert [r["id"] for r in mixed["refused"]] == [other.id, "no-such-task"]
    nothing = client.post("/api/tasks/retry", json={"ids": []}).json()
    assert (nothing["matched"], nothing["changed"], nothing["refused"]) == ([], [], [])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "ids"),
        ({"ids": ["a"], "filter": {"status": "failed"}}, "ids"),
        ({"filter": {"status": "late"}}, "filter.status"),
        ({"filter": {"created_from": 5}}, "filter.created_from"),
        ({"filter": {"colour": "red"}}, "filter.colour"),
        ({"ids": ["x"] * 1001}, "ids"),
        ({"filter": {}}, "filter"),
        ({"filter": {"meta": {}, "topic": None}}, "filter"),
        ({"filter": {"status": "failed"}}, "filter"),  # 3 match, over a limit of 2
    ],
)
def test_a_bulk_change_that_is_unclear_or_too_large_changes_nothing(
    app: App, client: TestClient, body: dict[str, Any], field: str
) -> None:
    for _ in range(3):
        reach(app.store, Status.FAILED)
    # A filter with a value set is tried under a limit of 2; an empty one under the real limit.
    limit = 2 if any(body.get("filter", {}).values()) else routes_module.MAX_BULK
    with patch.object(routes_module, "MAX_BULK", limit):
        refused = client.post("/api/tasks/retry", json=body)
    assert refused.status_code == 422 and refused.json()["error"]["field"] == field
    assert {t.status for t in app.store.task_list(limit=10).tasks} == {Status.FAILED}


def test_a_worker_is_scaled_over_the_api(app: App, client: TestClient) -> None:
    app.store.worker_beat(WorkerInfo(id="w:1:a", host="w", pid=1, concurrency=4))
    scaled = client.post("/api/workers/scale", json={"worker": "w:1:a", "concurrency": 6})
    assert scaled.status_code == 200 and scaled.json()["scale_to"] == 6
    assert [w.scale_to for w in app.store.worker_list()] == [6]
    missing = client.post("/api/workers/scale", json={"worker": "nobody", "concurrency": 6})
    assert refusal(missing) == (404, "worker")
    for body, field in [({"worker": "w:1:a"}, "concurrency"), ({"concurrency": 2}, "worker"),
                        ({"worker": "w:1:a", "concurrency": 0}, "concurrency"),
                        ({"worker": "w:1:a", "concurrency": 2**31}, "concurrency")]:  # fmt: skip
        assert refusal(client.post("/api/workers/scale", json=body)) == (422, field), body
