"""tenure's HTTP application served under a prefix, on SQLite and PostgreSQL:
mounted at ``/queue`` in a Starlette and a FastAPI application (the recipe of
``examples/mounting.py``, which the docs include), and behind ``tenure serve
--root-path /queue`` with a reverse proxy in front that strips the prefix.

Wherever it is served, every route of the OpenAPI document and ``/metrics``
refuse a request without the token and answer one with it; every dashboard page
and action asks for a login, and once logged in its links, forms, redirects,
static files, cookies and live stream stay under the prefix. The login's
``next``, a bulk action's way back, the CSRF origin check and the loopback
check hold there too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from examples.mounting import fastapi_site, starlette_site
from tenure import App, Status
from tenure.cli import serve as cli_serve
from tenure.http import create_app
from tenure.http.dashboard import Site
from tenure.http.openapi import document
from tests.apps.api import make_app, seed
from tests.integration.workers import WorkerProcess

TOKEN = "mounted-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PREFIX = "/queue"
PAGES = ["/", "/tasks", "/groups", "/workers", "/locks", "/periodic", "/reports"]
SERVINGS = ["starlette", "fastapi", "serve --root-path"]


class ReverseProxy(httpx.BaseTransport):
    """What a reverse proxy serving ``https://ops.example/queue/`` in front of
    ``tenure serve --root-path /queue`` does (nginx's ``proxy_pass`` with the
    ``Host`` and ``X-Forwarded-Proto`` headers set): it forwards ``/queue/…``
    as ``/…`` over plain HTTP, saying which host and scheme the browser used,
    and answers nothing else."""

    def __init__(self, prefix: str, port: int) -> None:
        self.prefix = prefix.encode()
        self.port = port
        self.upstream = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.raw_path
        if not path.startswith(self.prefix + b"/"):
            return httpx.Response(404, text="not proxied")
        headers = httpx.Headers(request.headers)
        headers["X-Forwarded-Proto"] = request.url.scheme
        headers["X-Forwarded-For"] = "203.0.113.7"
        url = httpx.URL(f"http://127.0.0.1:{self.port}").copy_with(
            raw_path=path[len(self.prefix) :]
        )
        forwarded = httpx.Request(request.method, url, headers=headers, content=request.read())
        return self.upstream.handle_request(forwarded)

    def close(self) -> None:
        self.upstream.close()


@dataclass
class Served:
    """A client of tenure's application served under ``/queue``, how it is
    served, and the App on the same store."""

    client: httpx.Client
    how: str
    app: App

    @property
    def origin(self) -> str:
        """What a browser's ``Origin`` says on a page of the server."""
        return str(self.client.base_url).rstrip("/")


@pytest.fixture
def app(store_url: str) -> Iterator[App]:
    built = make_app(store_url)
    seed(built)
    yield built
    built.close()


@pytest.fixture(params=SERVINGS)
def served(request: pytest.FixtureRequest, app: App) -> Iterator[Served]:
    how: str = request.param
    if how == "serve --root-path":
        with _served_by_tenure(app.url) as client:
            yield Served(client, how, app)
        return
    site = starlette_site(app, TOKEN) if how == "starlette" else fastapi_site(app, TOKEN)
    with TestClient(site, base_url="http://127.0.0.1:8000") as client:
        yield Served(client, how, app)


@contextmanager
def _served_by_tenure(url: str) -> Iterator[httpx.Client]:
    """``tenure serve --root-path /queue`` in a process of its own, and a
    client that reaches it through the prefix-stripping proxy."""
    server = WorkerProcess(
        url, "--port", "0", "--root-path", PREFIX, command="serve", app="tests.apps.api:app",
        env={cli_serve.TOKEN_VARIABLE: TOKEN}, ready="HTTP API of",
    )  # fmt: skip
    try:
        port = re.search(r"http://127\.0\.0\.1:(\d+)/api", server.wait_for_log("HTTP API of"))
        assert port
        proxy = ReverseProxy(PREFIX, int(port[1]))
        with httpx.Client(base_url="https://ops.example", transport=proxy) as client:
            yield client
    finally:
        server.signal()
        assert server.wait_exit() == 0


def _task(app: App) -> str:
    return app.lookup("add").enqueue(1, 2).id


def _api_calls(task_id: str) -> dict[tuple[str, str], tuple[dict[str, Any], int]]:
    """A request for every route of the OpenAPI document, and the status it
    gets with the token, in an order where each works (cancel, then retry)."""
    return {
        ("GET", "/api/openapi.json"): ({}, 200),
        ("POST", "/api/tasks"): ({"json": {"name": "add", "args": [1, 2]}}, 201),
        ("GET", "/api/tasks"): ({"params": {"limit": 5}}, 200),
        ("GET", "/api/tasks/{id}"): ({}, 200),
        ("GET", "/api/tasks/{id}/events"): ({}, 200),
        ("POST", "/api/tasks/{id}/cancel"): ({}, 200),
        ("POST", "/api/tasks/{id}/retry"): ({}, 200),
        ("GET", "/api/stats"): ({}, 200),
        ("GET", "/api/workers"): ({}, 200),
        ("POST", "/api/topics/pause"): ({"json": {"topic": "mounted"}}, 200),
        ("GET", "/api/topics/paused"): ({}, 200),
        ("POST", "/api/topics/resume"): ({"json": {"topic": "mounted"}}, 200),
        ("POST", "/api/topics/limit"): ({"json": {"topic": "mounted", "max_running": 2}}, 200),
        ("GET", "/api/topics/limits"): ({}, 200),
        ("POST", "/api/topics/rate"): ({"json": {"topic": "mounted", "max_starts": 5}}, 200),
        ("GET", "/api/topics/rates"): ({}, 200),
        ("POST", "/api/topics/ageing"): ({"json": {"topic": "mounted", "every_seconds": 60}}, 200),
        ("GET", "/api/topics/ageing"): ({}, 200),
        ("POST", "/api/workers/scale"): ({"json": {"worker": "none", "concurrency": 2}}, 404),
        ("POST", "/api/tasks/retry"): ({"json": {"ids": [task_id], "dry_run": True}}, 200),
        ("POST", "/api/tasks/cancel"): ({"json": {"ids": [task_id], "dry_run": True}}, 200),
        ("POST", "/api/schedules"): (
            {"json": {"name": "s", "task": "add", "every": 60, "args": [1, 2]}},
            201,
        ),
        ("GET", "/api/schedules"): ({}, 200),
        ("GET", "/api/schedules/{name}"): ({}, 200),
        ("PATCH", "/api/schedules/{name}"): ({"json": {"paused": True}}, 200),
        ("DELETE", "/api/schedules/{name}"): ({}, 200),
    }


def _documented() -> set[tuple[str, str]]:
    paths: dict[str, dict[str, Any]] = document(secured=True)["paths"]
    methods = {"get", "post", "put", "patch", "delete", "head", "options"}
    return {(m.upper(), path) for path, item in paths.items() for m in item if m in methods}


def test_every_api_route_and_the_metrics_ask_for_the_token_under_a_prefix(
    served: Served,
) -> None:
    client, task_id = served.client, _task(served.app)
    calls = _api_calls(task_id)
    assert set(calls) == _documented(), "a route of the document has no request here"
    before = served.app.tasks.count()
    for (method, path), (options, _) in calls.items():
        url = PREFIX + path.replace("{id}", quote(task_id, safe="")).replace("{name}", "s")
        for headers in ({}, {"Authorization": "Bearer not-the-token-at-all-0123"}):
            refused = client.request(method, url, headers=headers, **options)
            assert refused.status_code == 401, (served.how, method, url, refused.text)
            assert refused.headers["www-authenticate"].startswith("Bearer")
    assert served.app.tasks.count() == before, "a refused request changed the queue"
    assert served.app.store.schedule_get("s") is None, "a refused request added a schedule"
    for (method, path), (options, status) in calls.items():
        url = PREFIX + path.replace("{id}", quote(task_id, safe="")).replace("{name}", "s")
        answer = client.request(method, url, headers=AUTH, **options)
        assert answer.status_code == status, (served.how, method, url, answer.text)
    assert client.get(f"{PREFIX}/metrics").status_code == 401
    scraped = client.get(f"{PREFIX}/metrics", headers=AUTH)
    assert scraped.status_code == 200 and "tenure_tasks" in scraped.text


def test_api_answers_under_a_prefix_name_where_they_are(served: Served) -> None:
    client = served.client
    created = client.post(f"{PREFIX}/api/tasks", headers=AUTH, json={"name": "add", "args": [1, 2]})
    location = created.headers["location"]
    assert location == f"{PREFIX}/api/tasks/{quote(created.json()['id'], safe='')}"
    assert client.get(location, headers=AUTH).json()["id"] == created.json()["id"]
    missing = client.get(f"{PREFIX}/api/nothing-here", headers=AUTH)
    assert missing.status_code == 404 and missing.headers["content-type"] == "application/json"
    assert f"{PREFIX}/api/openapi.json" in missing.json()["error"]["message"]
    assert client.get(f"{PREFIX}/api/nothing-here").status_code == 401


def _site_pages(app: App) -> set[str]:
    """The dashboard's pages without parameters, as its routes declare them."""
    routes = Site(app, TOKEN).routes()
    return {
        route.path for route in routes
        if isinstance(route, Route) and "GET" in (route.methods or ())
        and "{" not in route.path and route.path not in ("/login", "/live")
    }  # fmt: skip


_LINK = re.compile(r'(?:href|src|action)="([^"]*)"')


def _log_in(client: httpx.Client, next_page: str) -> httpx.Response:
    answer = client.post(
        f"{PREFIX}/login", data={"token": TOKEN, "next": next_page}, follow_redirects=False
    )
    assert answer.status_code == 303, answer.text
    return answer


def test_every_dashboard_page_asks_for_a_login_and_stays_under_the_prefix(
    served: Served,
) -> None:
    client, task_id = served.client, _task(served.app)
    assert set(PAGES) == _site_pages(served.app), "a page of the dashboard is not checked here"
    pages = [*PAGES, f"/tasks/{quote(task_id, safe='')}"]
    for page in pages:
        answer = client.get(PREFIX + page, follow_redirects=False)
        assert answer.status_code == 303, (served.how, page)
        assert answer.headers["location"] == f"{PREFIX}/login?next={quote(PREFIX + page, safe='')}"
    assert client.get(f"{PREFIX}/live").status_code == 401
    login = client.get(f"{PREFIX}/login?next={PREFIX}/tasks")
    assert f'action="{PREFIX}/login"' in login.text and f'value="{PREFIX}/tasks"' in login.text
    answer = _log_in(client, f"{PREFIX}/tasks")
    assert answer.headers["location"] == f"{PREFIX}/tasks"
    cookie = SimpleCookie(answer.headers["set-cookie"])["tenure_session"]
    assert cookie["path"] == PREFIX and cookie["httponly"] and cookie["samesite"] == "strict"
    assets: set[str] = set()
    for page in pages:
        answer = client.get(PREFIX + page)
        assert answer.status_code == 200, (served.how, page, answer.text)
        links = [link for link in _LINK.findall(answer.text) if link]
        assert links and all(link.startswith(f"{PREFIX}/") for link in links), (page, links)
        assets |= {link for link in links if link.startswith(f"{PREFIX}/static/")}
        assert f'data-root="{PREFIX}"' in answer.text  # where the script opens the live stream
    assert len(assets) == 3
    for asset in sorted(assets):
        assert client.get(asset).status_code == 200, asset
    # An error under the static files' own mount still knows where the
    # dashboard begins: its page links there, and is a page, not JSON.
    for missing in (f"{PREFIX}/static/nope.css", f"{PREFIX}/static/api/nope"):
        answer = client.get(missing)
        assert answer.status_code == 404 and answer.headers["content-type"].startswith("text/html")
        links = [link for link in _LINK.findall(answer.text) if link]
        assert links and all(link.startswith(f"{PREFIX}/") for link in links), links
        assert not any(link.startswith(f"{PREFIX}/static/static/") for link in links), links
    streamed = client.head(f"{PREFIX}/live")
    assert streamed.status_code == 200
    assert streamed.headers["content-type"].startswith("text/event-stream")


def test_dashboard_actions_work_under_the_prefix_and_only_with_a_session(served: Served) -> None:
    client, app = served.client, served.app
    task_id = _task(app)
    quoted = quote(task_id, safe="")
    cancel = f"{PREFIX}/tasks/{quoted}/cancel"
    assert client.post(cancel, data={"csrf": "x"}).status_code == 403
    bulk = {"action": "cancel", "id": task_id}
    assert client.post(f"{PREFIX}/tasks", data=bulk).status_code == 403
    assert app.tasks.get(task_id).status is Status.PENDING
    _log_in(client, f"{PREFIX}/")
    page = client.get(f"{PREFIX}/tasks/{quoted}").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf and f'action="{cancel}"' in page
    elsewhere = {"Origin": "https://evil.example"}
    assert client.post(cancel, data={"csrf": csrf[1]}, headers=elsewhere).status_code == 403
    here = {"Origin": served.origin}
    done = client.post(cancel, data={"csrf": csrf[1]}, headers=here, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == f"{PREFIX}/tasks/{quoted}"
    notice = SimpleCookie(done.headers["set-cookie"])["tenure_notice"]
    assert notice["path"] == PREFIX
    assert bool(notice["secure"]) == served.origin.startswith("https:")  # behind the TLS proxy
    assert "Cancelled 1 task" in client.get(done.headers["location"]).text
    assert app.tasks.get(task_id).status is Status.CANCELLED
    back = f"{PREFIX}/tasks?status=cancelled"
    form = {"csrf": csrf[1], "action": "retry", "id": task_id, "back": back}
    retried = client.post(f"{PREFIX}/tasks", data=form, headers=here, follow_redirects=False)
    assert retried.status_code == 303 and retried.headers["location"] == back
    assert app.tasks.get(task_id).status is Status.PENDING
    out = client.post(f"{PREFIX}/logout", data={"csrf": csrf[1]}, follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == f"{PREFIX}/login"
    assert client.get(f"{PREFIX}/", follow_redirects=False).status_code == 303


@pytest.mark.parametrize(
    ("wanted", "lands"),
    [
        (f"{PREFIX}/tasks?status=failed", f"{PREFIX}/tasks?status=failed"),
        (PREFIX, PREFIX),
        ("/admin", f"{PREFIX}/"),  # the application it is mounted in
        (f"{PREFIX}/../admin", f"{PREFIX}/"),  # a browser resolves the dots
        (f"{PREFIX}/%2e%2e/admin", f"{PREFIX}/"),
        (f"{PREFIX}extra/tasks", f"{PREFIX}/"),  # shares the letters, not the path
        ("//evil.example/queue/", f"{PREFIX}/"),
        (f"{PREFIX}/..#/admin", f"{PREFIX}/"),  # the dots before a fragment too
        (f"{PREFIX}/tasks#older", f"{PREFIX}/tasks#older"),
        ("https://evil.example/queue/", f"{PREFIX}/"),
    ],
)
def test_the_login_and_a_bulk_action_go_back_only_inside_the_prefix(
    app: App, wanted: str, lands: str
) -> None:
    with TestClient(starlette_site(app, TOKEN), base_url="http://127.0.0.1:8000") as client:
        assert _log_in(client, wanted).headers["location"] == lands
        csrf = re.search(r'name="csrf" value="([^"]+)"', client.get(f"{PREFIX}/tasks").text)
        assert csrf
        form = {"csrf": csrf[1], "action": "retry", "id": "no-such-task", "back": wanted}
        answer = client.post(f"{PREFIX}/tasks", data=form, follow_redirects=False)
        assert answer.headers["location"] == lands


def test_a_form_from_another_origin_is_refused_under_the_prefix(app: App) -> None:
    task_id = _task(app)
    with TestClient(fastapi_site(app, TOKEN), base_url="http://127.0.0.1:8000") as client:
        _log_in(client, f"{PREFIX}/")
        page = client.get(f"{PREFIX}/tasks/{task_id}").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf
        cancel = f"{PREFIX}/tasks/{task_id}/cancel"
        elsewhere = {"Origin": "http://evil.example"}
        refused = client.post(cancel, data={"csrf": csrf[1]}, headers=elsewhere)
        assert refused.status_code == 403 and app.tasks.get(task_id).status is Status.PENDING
        here = {"Origin": "http://127.0.0.1:8000"}
        done = client.post(cancel, data={"csrf": csrf[1]}, headers=here, follow_redirects=False)
        assert done.status_code == 303 and app.tasks.get(task_id).status is Status.CANCELLED


def test_without_a_token_a_mounted_app_answers_loopback_hosts_only(app: App) -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    site = Starlette(routes=[Mount(PREFIX, app=create_app(app, token=None, insecure=True))])
    task_id = _task(app)
    with TestClient(site, base_url="http://127.0.0.1:8000") as client:
        for path in ("/api/tasks", "/metrics", "/"):
            rebound = client.get(PREFIX + path, headers={"Host": "rebind.evil.example"})
            assert rebound.status_code == 400, path
            assert client.get(PREFIX + path).status_code == 200, path
        cancel = f"{PREFIX}/api/tasks/{task_id}/cancel"
        refused = client.post(cancel, headers={"Origin": "http://evil.example"})
        assert refused.status_code == 403 and app.tasks.get(task_id).status is Status.PENDING
        assert client.post(cancel).status_code == 200


def test_the_application_around_it_is_untouched(app: App) -> None:
    for site in (starlette_site(app, TOKEN), fastapi_site(app, TOKEN)):
        with TestClient(site, base_url="http://127.0.0.1:8000") as client:
            _log_in(client, f"{PREFIX}/")
            home = client.get("/")
            assert home.status_code == 200 and home.text == "the shop"
            assert "tenure_session" not in home.request.headers.get("cookie", "")
            assert "tenure_session" in client.get(f"{PREFIX}/").request.headers["cookie"]
