"""Two roles: the operator's token changes the queue, a read-only token
(``TENURE_API_READ_TOKEN``) sees everything and changes nothing, in the API,
the metrics and the dashboard, for every write route and every button."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from tenure import App, ConfigError, Status
from tenure.http import create_app
from tenure.store import NewTask
from tenure.store.types import WorkerInfo
from tests.apps.dashboard import make_app, seed
from tests.conformance.support import reach

TOKEN = "operator-token-0123456789"
READ_TOKEN = "reader-token-0123456789ab"
BASE = "http://127.0.0.1:8765"
READING = {"GET", "HEAD", "OPTIONS"}


@pytest.fixture
def app(store_url: str) -> Iterator[App]:
    built = make_app(store_url)
    seed(built, idle=3)
    yield built
    built.close()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def api_writes(served: object) -> list[tuple[str, str]]:
    """Every (method, path) of the API that changes something."""
    found = []
    for route in getattr(served, "routes", []):
        if isinstance(route, Route) and route.path.startswith("/api"):
            found += [(m, route.path) for m in sorted(route.methods or ()) if m not in READING]
    return found


def test_a_read_only_token_reads_the_api_and_the_metrics_and_writes_nothing(app: App) -> None:
    failed, _ = reach(app.store, Status.FAILED)
    pending = app.store.task_create(NewTask(topic="work", name="resize"))
    served = create_app(app, token=TOKEN, read_token=READ_TOKEN)
    writes = api_writes(served)
    assert ("POST", "/api/tasks") in writes and len(writes) >= 3
    before = {t.id: t for t in app.store.task_list(limit=1000).tasks}
    with TestClient(served, base_url=BASE) as client:
        assert client.get("/api/tasks", headers=bearer(READ_TOKEN)).status_code == 200
        assert client.get(f"/api/tasks/{failed.id}", headers=bearer(READ_TOKEN)).status_code == 200
        assert client.get("/metrics", headers=bearer(READ_TOKEN)).status_code == 200
        for method, path in writes:
            target = path.replace("{id}", pending.id if "cancel" in path else failed.id)
            body = {"name": "resize", "args": ["x.png"]} if path == "/api/tasks" else None
            refused = client.request(method, target, headers=bearer(READ_TOKEN), json=body)
            assert refused.status_code == 403, (method, path, refused.text)
            assert "only read" in refused.json()["error"]["message"]
        assert {t.id: t for t in app.store.task_list(limit=1000).tasks} == before
        # The operator's token still does what the reader's may not.
        done = client.post(f"/api/tasks/{failed.id}/retry", headers=bearer(TOKEN))
        assert done.status_code == 200
        wrong = client.get("/api/tasks", headers=bearer("not-a-token-of-this-server"))
        assert wrong.status_code == 401


def test_a_read_only_login_sees_every_page_without_a_button_and_cannot_act(app: App) -> None:
    failed, _ = reach(app.store, Status.FAILED)
    with TestClient(create_app(app, token=TOKEN, read_token=READ_TOKEN), base_url=BASE) as client:
        login = client.post("/login", data={"token": READ_TOKEN}, follow_redirects=False)
        assert login.status_code == 303
        for path in ["/", "/tasks", "/groups", "/workers", "/locks", "/periodic", "/reports"]:
            assert client.get(path).status_code == 200, path
        page = client.get(f"/tasks/{failed.id}").text
        assert "/retry" not in page and "/cancel" not in page
        listing = client.get("/tasks").text
        assert "Retry selected" not in listing and "Read-only" in listing
        csrf = re.search(r'name="csrf" value="([^"]+)"', listing)
        assert csrf is not None
        for action in ("retry", "cancel"):
            answer = client.post(f"/tasks/{failed.id}/{action}", data={"csrf": csrf[1]})
            assert answer.status_code == 403 and "read-only token" in answer.text
        bulk = client.post("/tasks", data={"csrf": csrf[1], "action": "retry", "id": failed.id})
        assert bulk.status_code == 403
        assert app.store.task_get(failed.id).status is Status.FAILED  # type: ignore[union-attr]
        out = client.post("/logout", data={"csrf": csrf[1]}, follow_redirects=False)
        assert out.status_code == 303  # a reader may still log out


def test_a_readers_session_ends_with_its_token(app: App) -> None:
    with TestClient(create_app(app, token=TOKEN, read_token=READ_TOKEN), base_url=BASE) as client:
        client.post("/login", data={"token": READ_TOKEN})
        cookie = client.cookies["tenure_session"]
        assert client.get("/", follow_redirects=False).status_code == 200
    for read_token in (None, "another-reader-token-012345"):
        served = create_app(app, token=TOKEN, read_token=read_token)
        with TestClient(served, base_url=BASE) as later:
            later.cookies.set("tenure_session", cookie)
            assert later.get("/", follow_redirects=False).status_code == 303, read_token


def test_the_operator_login_keeps_its_buttons(app: App) -> None:
    failed, _ = reach(app.store, Status.FAILED)
    with TestClient(create_app(app, token=TOKEN, read_token=READ_TOKEN), base_url=BASE) as client:
        client.post("/login", data={"token": TOKEN})
        page = client.get(f"/tasks/{failed.id}").text
        assert "/retry" in page
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None
        client.post(f"/tasks/{failed.id}/retry", data={"csrf": csrf[1]})
        assert app.store.task_get(failed.id).status is Status.PENDING  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("token", "read_token", "insecure", "says"),
    [
        (TOKEN, TOKEN, False, "must not be the operator's"),
        (TOKEN, "short", False, "at least 16"),
        (None, READ_TOKEN, True, "needs an operator token"),
    ],
)
def test_a_read_only_token_is_refused_where_it_makes_no_sense(
    app: App, token: str | None, read_token: str, insecure: bool, says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        create_app(app, token=token, read_token=read_token, insecure=insecure)


def test_a_schedule_is_paused_and_resumed_on_the_dashboard_by_the_operator_only(
    app: App,
) -> None:
    app.schedules.add("hourly", "resize", 3600, args=["logo.png", 320])
    served = create_app(app, token=TOKEN, read_token=READ_TOKEN)
    with TestClient(served, base_url=BASE) as reader, TestClient(served, base_url=BASE) as operator:
        reader.post("/login", data={"token": READ_TOKEN})
        page = reader.get("/periodic").text
        assert "hourly" in page and "/periodic/hourly/pause" not in page
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None
        assert reader.post("/periodic/hourly/pause", data={"csrf": csrf[1]}).status_code == 403
        assert app.schedules.get("hourly").paused is False
        operator.post("/login", data={"token": TOKEN})
        page = operator.get("/periodic").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None and "/periodic/hourly/pause" in page
        paused = operator.post("/periodic/hourly/pause", data={"csrf": csrf[1]})
        assert paused.status_code == 200 and "/periodic/hourly/resume" in paused.text
        assert app.schedules.get("hourly").paused is True
        operator.post("/periodic/hourly/resume", data={"csrf": csrf[1]})
        assert app.schedules.get("hourly").paused is False
        missing = operator.post("/periodic/nothing/pause", data={"csrf": csrf[1]})
        assert missing.status_code == 404


def test_a_topic_is_paused_and_resumed_on_the_dashboard_by_the_operator_only(app: App) -> None:
    app.lookup("resize").enqueue("logo.png", 320)
    served = create_app(app, token=TOKEN, read_token=READ_TOKEN)
    topic = app.lookup("resize").config.topic
    pause, resume = f"/topics/{topic}/pause", f"/topics/{topic}/resume"
    with TestClient(served, base_url=BASE) as reader, TestClient(served, base_url=BASE) as operator:
        reader.post("/login", data={"token": READ_TOKEN})
        page = reader.get("/").text
        assert topic in page and pause not in page
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None
        assert reader.post(pause, data={"csrf": csrf[1]}).status_code == 403
        assert app.tasks.paused() == []
        operator.post("/login", data={"token": TOKEN})
        page = operator.get("/").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None and pause in page
        paused = operator.post(pause, data={"csrf": csrf[1]})
        assert paused.status_code == 200 and resume in paused.text and "paused" in paused.text
        assert [p.topic for p in app.tasks.paused()] == [topic]
        assert operator.post(resume, data={"csrf": csrf[1]}).status_code == 200
        assert app.tasks.paused() == []
        assert operator.post(f"/topics/{topic}/stop", data={"csrf": csrf[1]}).status_code == 404


def test_a_worker_is_scaled_on_the_dashboard_by_the_operator_only(app: App) -> None:
    app.store.worker_beat(WorkerInfo(id="web-1:42:abc", host="web-1", pid=42, concurrency=4))
    served = create_app(app, token=TOKEN, read_token=READ_TOKEN)
    scale = f"/workers/{quote('web-1:42:abc')}/scale"
    with TestClient(served, base_url=BASE) as reader, TestClient(served, base_url=BASE) as operator:
        reader.post("/login", data={"token": READ_TOKEN})
        page = reader.get("/workers").text
        assert "web-1:42:abc" in page and scale not in page
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None
        assert reader.post(scale, data={"csrf": csrf[1], "concurrency": "8"}).status_code == 403
        assert [w.scale_to for w in app.tasks.workers()] == [None]
        operator.post("/login", data={"token": TOKEN})
        page = operator.get("/workers").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None and scale in page
        scaled = operator.post(scale, data={"csrf": csrf[1], "concurrency": "8"})
        assert scaled.status_code == 200 and "to 8 at its next heartbeat" in scaled.text
        assert [w.scale_to for w in app.tasks.workers()] == [8]
        for wrong in ("0", "x", "", "-2"):
            assert (
                operator.post(scale, data={"csrf": csrf[1], "concurrency": wrong}).status_code
                == 400
            )
        missing = operator.post("/workers/nobody/scale", data={"csrf": csrf[1], "concurrency": "2"})
        assert missing.status_code == 404
