"""The web dashboard (tenure.http.dashboard), in process, on SQLite and PostgreSQL:
login and its cookie, CSRF and origin checks on every action, escaping, the
security headers, each page's answer and its refusals. The browser test
(test_dashboard_browser.py) drives the same pages in Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator
from http.cookies import SimpleCookie

import pytest
from starlette.testclient import TestClient

from tenure import App, Status
from tenure.http import create_app
from tests.apps.dashboard import SCRIPT, beat, make_app, seed

TOKEN = "dashboard-token-0123456789"
BASE = "http://127.0.0.1:8765"
PAGES = ["/", "/tasks", "/groups", "/workers", "/locks", "/periodic", "/reports"]


@pytest.fixture
def app(store_url: str) -> Iterator[App]:
    built = make_app(store_url)
    seed(built, idle=10)
    beat(built)
    yield built
    built.close()


@pytest.fixture
def browser(app: App) -> Iterator[TestClient]:
    """A client that has logged in, as a browser would."""
    with TestClient(create_app(app, token=TOKEN), base_url=BASE) as client:
        answer = client.post("/login", data={"token": TOKEN, "next": "/"}, follow_redirects=False)
        assert answer.status_code == 303
        yield client


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "no CSRF field on the page"
    return found.group(1)


def test_pages_need_a_login_and_the_token_makes_a_strict_cookie(app: App) -> None:
    with TestClient(create_app(app, token=TOKEN), base_url=BASE) as client:
        for path in [*PAGES, "/tasks/anything"]:
            answer = client.get(path, follow_redirects=False)
            assert answer.status_code == 303, path
            assert answer.headers["location"].startswith("/login?next=")
        assert client.get("/live").status_code == 401
        wrong = client.post("/login", data={"token": "not-the-token-at-all", "next": "/tasks"})
        assert wrong.status_code == 401
        assert "not the right one" in wrong.text
        assert "tenure_session" not in client.cookies
        right = client.post(
            "/login", data={"token": TOKEN, "next": "/tasks?status=failed"}, follow_redirects=False
        )
        assert right.status_code == 303
        assert right.headers["location"] == "/tasks?status=failed"
        cookie = SimpleCookie(right.headers["set-cookie"])["tenure_session"]
        assert cookie["httponly"] is True
        assert cookie["samesite"].lower() == "strict"
        assert TOKEN not in right.headers["set-cookie"]
        assert client.get("/").status_code == 200


def test_a_login_never_sends_the_browser_to_another_site(app: App) -> None:
    with TestClient(create_app(app, token=TOKEN), base_url=BASE) as client:
        for target in ["//evil.example/x", "https://evil.example", "/\\evil.example", ""]:
            answer = client.post(
                "/login", data={"token": TOKEN, "next": target}, follow_redirects=False
            )
            assert answer.headers["location"] == "/", target


def test_a_forged_or_expired_session_is_not_a_login(app: App) -> None:
    with TestClient(create_app(app, token=TOKEN), base_url=BASE) as client:
        client.post("/login", data={"token": TOKEN})
        genuine = client.cookies["tenure_session"]
        session_id, expires, mac = genuine.split(".")
        for forged in [f"{session_id}.{int(expires) + 1}.{mac}", f"x{session_id}.{expires}.{mac}",
                       f"{session_id}.1.{mac}", "garbage"]:  # fmt: skip
            client.cookies.clear()
            client.cookies.set("tenure_session", forged)
            assert client.get("/", follow_redirects=False).status_code == 303, forged
        client.cookies.clear()
        client.cookies.set("tenure_session", genuine)
        assert client.get("/", follow_redirects=False).status_code == 200
    # A session made with another token is not one for this server.
    with TestClient(create_app(app, token="another-token-0123456789"), base_url=BASE) as other:
        other.cookies.set("tenure_session", genuine)
        assert other.get("/", follow_redirects=False).status_code == 303


def test_the_session_does_not_open_the_api(browser: TestClient) -> None:
    assert browser.get("/api/stats").status_code == 401
    assert browser.get("/metrics").status_code == 401


def test_every_page_answers_with_the_security_headers(browser: TestClient) -> None:
    for path in PAGES:
        answer = browser.get(path)
        assert answer.status_code == 200, (path, answer.text[:500])
        policy = answer.headers["content-security-policy"]
        assert "script-src 'self'" in policy
        assert "default-src 'none'" in policy
        assert "unsafe-inline" not in policy
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["cache-control"] == "no-store"
        assert "<script>" not in answer.text.replace(
            '<script src="/static/dashboard.js" defer></script>', ""
        ), path


def test_user_text_is_escaped_everywhere(app: App, browser: TestClient) -> None:
    page = browser.get("/tasks", params={"text": "alert"}).text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert SCRIPT not in page
    [task] = [t for t in app.tasks.list(topic="idle") if t.description == SCRIPT]
    detail = browser.get(f"/tasks/{task.id}").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in detail
    assert SCRIPT not in detail
    reflected = browser.get("/tasks", params={"topic": SCRIPT}).text
    assert SCRIPT not in reflected


def test_bad_filters_and_unknown_tasks_are_pages_that_say_why(browser: TestClient) -> None:
    bad = browser.get("/tasks", params={"status": "sleeping"})
    assert bad.status_code == 400
    assert "no such status" in bad.text
    tampered = browser.get("/tasks", params={"after": "not-a-cursor"})
    assert tampered.status_code == 400
    missing = browser.get("/tasks/no-such-task")
    assert missing.status_code == 404
    assert "no-such-task" in missing.text
    too_long = browser.get("/tasks", params={"name": "x" * 501})
    assert too_long.status_code == 400


def test_retry_and_cancel_need_the_forms_csrf_token(app: App, browser: TestClient) -> None:
    [failed] = app.tasks.list(status=Status.FAILED, limit=1)
    pending = app.tasks.list(topic="idle", status=Status.PENDING, limit=1)[0]
    page = browser.get(f"/tasks/{pending.id}").text
    token = csrf_of(page)
    refusals = [
        ({}, {}),  # no token
        ({"csrf": "forged"}, {}),
        ({"csrf": token}, {"Origin": "https://evil.example"}),
        ({"csrf": token}, {"Origin": "null"}),
    ]
    for form, headers in refusals:
        answer = browser.post(f"/tasks/{pending.id}/cancel", data=form, headers=headers)
        assert answer.status_code == 403, (form, headers)
        assert app.tasks.get(pending.id).status is Status.PENDING
    done = browser.post(
        f"/tasks/{pending.id}/cancel", data={"csrf": token}, headers={"Origin": BASE},
        follow_redirects=False,
    )  # fmt: skip
    assert done.status_code == 303
    assert app.tasks.get(pending.id).status is Status.CANCELLED
    assert "Cancelled 1 task." in browser.get(done.headers["location"]).text
    # The notice is shown once.
    assert "Cancelled 1 task." not in browser.get(done.headers["location"]).text
    browser.post(f"/tasks/{failed.id}/retry", data={"csrf": token})
    assert app.tasks.get(failed.id).status is Status.PENDING


def test_bulk_actions_change_what_they_can_and_say_what_they_could_not(
    app: App, browser: TestClient
) -> None:
    idle = app.tasks.list(topic="idle", status=Status.PENDING, limit=3)
    done = app.tasks.list(status=Status.SNOOZED, limit=1)
    token = csrf_of(browser.get("/tasks").text)
    ids = [t.id for t in idle] + [t.id for t in done] + ["no-such-task"]
    answer = browser.post(
        "/tasks", data={"csrf": token, "action": "cancel", "id": ids, "back": "/tasks?topic=idle"},
        follow_redirects=False,
    )  # fmt: skip
    assert answer.status_code == 303
    assert answer.headers["location"] == "/tasks?topic=idle"
    assert all(app.tasks.get(t.id).status is Status.CANCELLED for t in idle + done)
    notice = browser.get(answer.headers["location"]).text
    assert f"Cancelled {len(idle) + len(done)} tasks. 1 could not be" in notice
    retried = browser.post("/tasks", data={"csrf": token, "action": "retry", "id": ids[:2]})
    assert retried.status_code == 200
    assert all(app.tasks.get(i).status is Status.PENDING for i in ids[:2])
    nothing = browser.post("/tasks", data={"csrf": token, "action": "explode", "id": ids})
    assert nothing.status_code == 400


def test_logout_needs_the_token_too_and_ends_the_session(browser: TestClient) -> None:
    token = csrf_of(browser.get("/").text)
    assert browser.post("/logout", data={}).status_code == 403
    assert browser.post("/logout", data={"csrf": token}, follow_redirects=False).status_code == 303
    assert browser.get("/", follow_redirects=False).status_code == 303


def test_without_a_token_there_is_no_login_but_still_csrf(app: App) -> None:
    unguarded = create_app(app, token=None, insecure=True)
    with TestClient(unguarded, base_url=BASE) as client:
        page = client.get("/")
        assert page.status_code == 200
        assert "Log out" not in page.text
        pending = app.tasks.list(topic="idle", status=Status.PENDING, limit=1)[0]
        assert client.post(f"/tasks/{pending.id}/cancel", data={}).status_code == 403
        token = csrf_of(client.get(f"/tasks/{pending.id}").text)
        client.post(f"/tasks/{pending.id}/cancel", data={"csrf": token})
        assert app.tasks.get(pending.id).status is Status.CANCELLED
        assert client.get("/", headers={"Host": "attacker.example"}).status_code == 400
