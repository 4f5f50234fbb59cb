"""The web dashboard (tenure.http.dashboard), in process, on SQLite and PostgreSQL:
login and its cookie, CSRF and origin checks on every action, escaping, the
security headers, each page's answer and its refusals. The browser test
(test_dashboard_browser.py) drives the same pages in Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator
from http.cookies import SimpleCookie
from typing import Any

import pytest
from starlette.testclient import TestClient

from tenure import App, Lease, Status, TaskError
from tenure.http import create_app
from tenure.store import NewTask, ReserveParams
from tests.apps.dashboard import SCRIPT, beat, make_app, seed
from tests.conformance.support import fail_each

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
        session_id, expires, role, mac = genuine.split(".")
        assert role == "o"  # the operator's
        for forged in [f"{session_id}.{int(expires) + 1}.{role}.{mac}",
                       f"x{session_id}.{expires}.{role}.{mac}", f"{session_id}.1.{role}.{mac}",
                       f"{session_id}.{expires}.r.{mac}", f"{session_id}.{expires}.{mac}",
                       "garbage"]:  # fmt: skip
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
    assert bad.status_code == 422
    assert "unknown status" in bad.text
    tampered = browser.get("/tasks", params={"after": "not-a-cursor"})
    assert tampered.status_code == 422
    missing = browser.get("/tasks/no-such-task")
    assert missing.status_code == 404
    assert "no-such-task" in missing.text
    too_long = browser.get("/tasks", params={"name": "x" * 501})
    assert too_long.status_code == 422


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


# -- review: errors as pages, bounded forms, whole bulk actions, hosts, odd ids ----------


def test_a_person_gets_a_page_and_a_program_json_for_a_failure(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """404, 405 and 500 off the API are HTML pages for a browser (the API's and
    the metrics' stay JSON), and none says more than that the server failed."""
    from tenure.http.dashboard import pages

    def broken(app: App) -> dict[str, object]:
        raise RuntimeError("secret detail of a bug")

    monkeypatch.setattr(pages, "overview", broken)
    served = create_app(app, token=TOKEN)
    with TestClient(served, base_url=BASE, raise_server_exceptions=False) as client:
        client.post("/login", data={"token": TOKEN})
        for path, status in [("/no-such-page", 404), ("/static/nothing.css", 404)]:
            answer = client.get(path)
            assert answer.status_code == status, path
            assert answer.headers["content-type"].startswith("text/html"), path
            assert f"Nothing at {path}" in answer.text
        refused = client.get("/logout")
        assert refused.status_code == 405
        assert refused.headers["content-type"].startswith("text/html")
        assert refused.headers["allow"] == "POST"
        failed = client.get("/")
        assert failed.status_code == 500
        assert failed.headers["content-type"].startswith("text/html")
        assert "its log says why" in failed.text
        assert "secret detail" not in failed.text
        assert "Traceback" not in failed.text
        assert "default-src 'none'" in failed.headers["content-security-policy"]
        api = client.get("/api/no-such-thing", headers={"Authorization": f"Bearer {TOKEN}"})
        assert api.status_code == 404
        assert api.headers["content-type"].startswith("application/json")
    # Without the dashboard, everything is the API's.
    with TestClient(create_app(app, token=TOKEN, dashboard=False), base_url=BASE) as client:
        answer = client.get("/no-such-page")
        assert answer.status_code == 404
        assert answer.headers["content-type"].startswith("application/json")


def test_a_csrf_field_of_any_characters_is_refused_not_a_failure(browser: TestClient) -> None:
    """``hmac.compare_digest`` raises ``TypeError`` on non-ASCII text: a CSRF
    field with such characters was a 500 and a logged traceback."""
    token = csrf_of(browser.get("/").text)
    answer = browser.post("/logout", data={"csrf": token[:-1] + "é"}, follow_redirects=False)
    assert answer.status_code == 403


def test_a_session_cookie_of_any_characters_is_no_login_not_a_failure(app: App) -> None:
    with TestClient(create_app(app, token=TOKEN), base_url=BASE) as client:
        client.post("/login", data={"token": TOKEN})
        session_id, expires, role, mac = client.cookies["tenure_session"].split(".")
        client.cookies.clear()
        forged = f"tenure_session={session_id}.{expires}.{role}.{mac[:-1]}\xe9".encode("latin-1")
        headers: Any = {"Cookie": forged}  # bytes as sent: Latin-1 on the wire
        answer = client.get("/", headers=headers, follow_redirects=False)
        assert answer.status_code == 303
        assert answer.headers["location"].startswith("/login")


def test_forms_are_read_within_bounds_before_anything_else(browser: TestClient) -> None:
    """The login page takes POSTs from anyone: a body over the limit is refused
    (413) and a file upload (multipart, which Starlette spools to disk) is not
    read at all (415)."""
    for path in ["/login", "/tasks", "/logout"]:
        huge = browser.post(path, data={"token": "x" * 2_000_000})
        assert huge.status_code == 413, path
        assert huge.headers["content-type"].startswith("text/html")
        upload = browser.post(path, files={"token": ("t.bin", b"x" * 1000)})
        assert upload.status_code == 415, path


def test_a_bulk_action_over_the_limit_changes_nothing(app: App, browser: TestClient) -> None:
    """Over 500 tasks named: refused whole, where the first 500 used to be
    changed and the rest dropped without a word."""
    pending = app.tasks.list(topic="idle", status=Status.PENDING, limit=3)
    token = csrf_of(browser.get("/tasks").text)
    ids = [t.id for t in pending] + [f"missing-{n}" for n in range(498)]
    answer = browser.post("/tasks", data={"csrf": token, "action": "cancel", "id": ids},
                          follow_redirects=False)  # fmt: skip
    assert answer.status_code == 400
    assert "At most 500 tasks at once (501 chosen); none was changed." in answer.text
    assert all(app.tasks.get(t.id).status is Status.PENDING for t in pending)
    # The same id twice is one task.
    twice = browser.post("/tasks", data={"csrf": token, "action": "cancel",
                                         "id": [pending[0].id] * 2})  # fmt: skip
    assert "Cancelled 1 task." in twice.text
    assert "could not be" not in twice.text


def test_a_bulk_action_the_store_stops_halfway_says_what_it_did(
    app: App, browser: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tenure.errors import StoreUnavailable

    pending = app.tasks.list(topic="idle", status=Status.PENDING, limit=5)
    token = csrf_of(browser.get("/tasks").text)
    original, calls = app.store.task_cancel, []

    def flaky(task_id: str, **options: object) -> object:
        calls.append(task_id)
        if len(calls) > 2:
            raise StoreUnavailable("connection refused")
        return original(task_id, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(app.store, "task_cancel", flaky)
    ids = [t.id for t in pending]
    answer = browser.post("/tasks", data={"csrf": token, "action": "cancel", "id": ids})
    assert answer.status_code == 200
    assert "Cancelled 2 tasks. 3 were not tried: the store failed" in answer.text
    assert [app.tasks.get(i).status for i in ids] == [Status.CANCELLED] * 2 + [Status.PENDING] * 3


def test_a_notice_is_what_the_server_did_never_text_from_the_cookie(browser: TestClient) -> None:
    """The one-shot notice cookie carries counts; a planted one (from a sibling
    host, say) cannot make the page say anything."""
    browser.cookies.set("tenure_notice", "Your%20session%20expired%3A%20log%20in%20at%20evil")
    page = browser.get("/tasks").text
    assert "evil" not in page
    assert 'class="notice"' not in page


@pytest.mark.parametrize(
    ("host", "answered"),
    [
        ("127.0.0.1:8765", True), ("localhost:8765", True), ("LOCALHOST", True),
        ("localhost.:8765", True), ("[::1]:8765", True), ("[::1]", True),
        ("127.0.0.2:8765", True),
        ("attacker.example", False), ("localhost.attacker.example", False),
        ("127.0.0.1.nip.io", False), ("[::2]:8765", False), ("::1", False),
        ("127.0.0.1:port", False), ("", False), ("[::ffff:7f00:1]", False),
    ],
)  # fmt: skip
def test_without_a_token_only_loopback_host_names_are_answered(
    app: App, host: str, answered: bool
) -> None:
    """Any loopback address (``--insecure --host 127.0.0.2`` used to refuse
    every request), ``localhost`` with its final dot, IPv6's ``[::1]`` with a
    port; never a name that another resolver could point at 127.0.0.1."""
    unguarded = create_app(app, token=None, insecure=True, dashboard=False)
    with TestClient(unguarded, base_url=BASE) as client:
        status = client.get("/api/stats", headers={"Host": host}).status_code
        assert (status == 200) is answered, (host, status)


def test_a_task_whose_id_holds_markup_or_url_characters_has_its_page_and_actions(
    app: App, browser: TestClient
) -> None:
    notify = app.lookup("notify")
    markup = "<b onmouseover=alert(1)>x</b>".replace("/", "")  # an id holds no slash
    for chosen in ["a?b#c d&e", "100%;.x", markup]:
        task = notify.options(id=chosen, group_id=SCRIPT).enqueue(7)
        listing = browser.get("/tasks", params={"group": SCRIPT})
        assert SCRIPT not in listing.text
        assert markup not in listing.text
        link = re.search(r'<a class="mono" href="(/tasks/[^"]+)">', listing.text)
        assert link
        page = browser.get(link.group(1).replace("&amp;", "&"))
        assert page.status_code == 200, chosen
        assert SCRIPT not in page.text
        action = re.search(r'action="(/tasks/[^"]+/cancel)"', page.text)
        assert action
        done = browser.post(
            action.group(1).replace("&amp;", "&"), data={"csrf": csrf_of(page.text)}
        )
        assert done.status_code == 200, chosen
        assert "Cancelled 1 task." in done.text
        assert app.tasks.get(task.id).status is Status.CANCELLED


def test_without_a_token_a_page_of_another_site_cannot_change_tasks(app: App) -> None:
    """A POST without a body needs no CORS permission: any page a developer
    visits could retry or cancel a task of an ``--insecure`` server by its id
    (ids may be chosen, hence guessed). The browser says where the page is
    from (``Origin``); programs send none."""
    notify = app.lookup("notify")
    unguarded = create_app(app, token=None, insecure=True)
    with TestClient(unguarded, base_url=BASE) as client:
        for origin in ["https://attacker.example", "null", "http://localhost:8765"]:
            task = notify.options(id=f"guessable-{len(origin)}").enqueue(1)
            answer = client.post(f"/api/tasks/{task.id}/cancel", headers={"Origin": origin})
            assert answer.status_code == 403, origin
            assert app.tasks.get(task.id).status is Status.PENDING
        for headers in [{}, {"Origin": BASE}]:
            task = notify.enqueue(2)
            answer = client.post(f"/api/tasks/{task.id}/cancel", headers=headers)
            assert answer.status_code == 200, headers
            assert app.tasks.get(task.id).status is Status.CANCELLED


def test_every_text_a_task_or_worker_carries_is_escaped_on_every_page(
    app: App, browser: TestClient
) -> None:
    """Topic, name, sub-topic, tags, group, description, data, error and
    traceback, a worker's host, pool and topics: any can hold markup."""
    from tenure.store.types import TaskError, WorkerInfo
    from tests.conformance.support import new, reserve_one

    marked = {"topic": SCRIPT, "name": SCRIPT, "sub_topic": SCRIPT, "tags": (SCRIPT,),
              "group_id": SCRIPT, "description": SCRIPT, "data": {SCRIPT: [SCRIPT]}}  # fmt: skip
    created = app.store.task_create(new(**marked))
    _, lease = reserve_one(app.store, topics=[SCRIPT], tags=frozenset({SCRIPT}))
    app.store.task_fail(lease, TaskError(SCRIPT, SCRIPT, SCRIPT))
    worker = WorkerInfo(
        id=SCRIPT, host=SCRIPT, pid=1, topics=(SCRIPT,), tags=(SCRIPT,), pool=SCRIPT
    )
    app.store.worker_beat(worker)
    for path in [*PAGES, f"/tasks/{created.id}", f"/tasks?topic={SCRIPT}&status=failed"]:
        answer = browser.get(path)
        assert answer.status_code == 200, path
        assert SCRIPT not in answer.text, path
    assert "&lt;script&gt;" in browser.get(f"/tasks/{created.id}").text


def test_a_tasks_progress_shows_on_its_page(app: App, browser: TestClient) -> None:
    task = app.store.task_create(NewTask(topic="progress", name="reports"))
    [running] = app.store.task_reserve(ReserveParams(owner="w", topics=["progress"]))
    lease = Lease(running.id, "w", running.lease_token or 0)
    app.store.task_progress(lease, 0.4, "step <2> of 5")
    page = browser.get(f"/tasks/{task.id}").text
    assert 'width="40.00"' in page and "40%" in page
    assert "step &lt;2&gt; of 5" in page  # the note is the task's text: escaped


def test_a_task_page_shows_the_keys_it_runs_under(app: App, browser: TestClient) -> None:
    keyed = app.store.task_create(
        NewTask(
            topic="keys",
            name="n",
            limit_key="acct:<7>",
            limit_max=2,
            order_key="ledger:7",
            fair_key="fair:acme",
        )
    )
    page = browser.get(f"/tasks/{keyed.id}").text
    assert "acct:&lt;7&gt; (at most 2 at once)" in page and "ledger:7" in page
    assert "fair key" in page and "fair:acme" in page
    plain = browser.get(f"/tasks/{app.store.task_create(NewTask(topic='k', name='n')).id}").text
    assert "limit key" not in plain and "order key" not in plain


def test_a_task_page_shows_every_attempts_error_and_what_it_waits_for(
    app: App, browser: TestClient
) -> None:
    store = app.store
    resize, notify = app.lookup("resize"), app.lookup("notify")
    handle = app.group([resize.s("a.png")], on_complete=notify.s())
    [member] = handle.members
    assert handle.callback is not None
    waiting = browser.get(f"/tasks/{handle.callback.id}").text
    assert "waits for" in waiting and "1 still to end (all ended)" in waiting
    failing = store.task_create(NewTask(topic="errors", name="n", max_attempts=3))
    said = [TaskError("ValueError", f"attempt {n} said no <b>", "Traceback ...") for n in (1, 2, 3)]
    fail_each(store, "errors", said)
    page = browser.get(f"/tasks/{failing.id}").text
    assert "Every attempt's error" in page
    for attempt in (1, 2, 3):
        assert f"attempt {attempt} said no &lt;b&gt;" in page
    assert "waits for" not in browser.get(f"/tasks/{member.id}").text  # it waits for nothing


def test_the_overview_notes_each_topics_limit_rate_and_ageing(
    app: App, browser: TestClient
) -> None:
    """A topic set up before any task of it arrives is listed too."""
    app.store.topic_limit("mail", 3)
    app.store.topic_rate("mail", 100, per=60)
    app.store.topic_ageing("reports", 60, most=5)
    page = browser.get("/").text
    assert "at most 3 running" in page and "at most 100 starts per 60 s" in page
    assert "+1 priority per 60 s waited, at most +5" in page
    assert ">reports</a>" in page
