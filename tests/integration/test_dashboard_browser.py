"""The dashboard in a real headless Chromium (Debian's ``chromium``, driven by
Playwright), served by a real ``tenure serve`` process while a real ``tenure
worker`` runs tasks, on SQLite and PostgreSQL.

It logs in, loads every page, watches the overview update by itself, filters,
pages forward while new tasks arrive (none skipped or repeated), opens a failed
task and retries it, cancels a pending one and a selection (the store shows
each), checks that a task described as ``<script>`` shows the text and runs
nothing, and saves a screenshot of each page (``TENURE_UPDATE_SCREENSHOTS=1``
writes them to docs/screenshots/ for the README). Mounted under ``/queue`` in
an application of the user's, its styles, script, live stream and actions work.

Chromium missing: skipped with the reason, except where
``TENURE_REQUIRE_CHROMIUM=1`` (CI) makes it a failure.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tenure import App, Status
from tests.apps.dashboard import SCRIPT, make_app, seed
from tests.integration.workers import ROOT, WorkerProcess, wait_for

TOKEN = "browser-token-0123456789abcdef"
APP = "tests.apps.dashboard:app"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

try:
    from playwright.sync_api import Browser, Page, expect, sync_playwright
except ImportError:  # pragma: no cover - a dev dependency
    sync_playwright = None  # type: ignore[assignment]

if CHROMIUM is None or sync_playwright is None:
    reason = "the browser test needs Debian's chromium and playwright: apt-get install chromium"
    if os.environ.get("TENURE_REQUIRE_CHROMIUM") == "1":
        raise RuntimeError(f"TENURE_REQUIRE_CHROMIUM=1: {reason}")
    pytest.skip(reason, allow_module_level=True)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        yield browser
        browser.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    if os.environ.get("TENURE_UPDATE_SCREENSHOTS") == "1":
        return ROOT / "docs" / "screenshots"
    return tmp_path


@pytest.fixture
def served(store_url: str) -> Iterator[tuple[App, str]]:
    """The seeded store, a worker draining topic ``work``, and the dashboard's address."""
    app = make_app(store_url)
    seed(app)
    worker = WorkerProcess(store_url, "--topics", "work", "--interval", "0.2", app=APP)
    server = WorkerProcess(
        store_url, "--port", "0", command="serve", app=APP,
        env={"TENURE_API_TOKEN": TOKEN}, ready="HTTP API of",
    )  # fmt: skip
    try:
        found = re.search(r"http://([\d.]+:\d+)/api", server.wait_for_log("HTTP API of"))
        assert found
        wait_for(lambda: not app.tasks.count(topic="work", status=Status.PENDING)
                 and not app.tasks.count(topic="work", status=Status.RUNNING),
                 "the worker to drain the work topic")  # fmt: skip
        yield app, f"http://{found.group(1)}"
    finally:
        server.signal()
        worker.signal()
        assert server.wait_exit() == 0
        assert worker.wait_exit() == 0
        app.close()


class Watch:
    """What the page did that it should not: console errors (a CSP refusal is
    one), failed requests, dialogs other than our own confirmations."""

    def __init__(self, page: Page) -> None:
        self.problems: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda e: self.problems.append(str(e)))
        page.on("dialog", self._dialog)

    def _console(self, message: Any) -> None:
        if message.type != "error":
            return
        where = message.location.get("url", "")
        if "status of 401" in message.text and where.endswith("/login"):
            return  # the wrong token, on purpose
        self.problems.append(f"{message.text} ({where})")

    def _dialog(self, dialog: Any) -> None:
        if dialog.type != "confirm":
            self.problems.append(f"{dialog.type}: {dialog.message}")
        dialog.accept()


def ids_on(page: Page) -> list[str]:
    values: list[str] = page.locator('input[name="id"]').evaluate_all("e => e.map(x => x.value)")
    return values


def log_in(page: Page, base: str) -> None:
    page.goto(f"{base}/tasks?status=failed")
    expect(page).to_have_url(re.compile(r"/login\?next="))
    page.fill('input[name="token"]', "wrong-token-0123456789")
    page.click("button[type=submit]")
    expect(page.locator(".error")).to_contain_text("not the right one")
    page.fill('input[name="token"]', TOKEN)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{base}/tasks?status=failed")


def overview_updates_by_itself(page: Page, app: App, base: str) -> None:
    page.goto(f"{base}/")
    expect(page.locator("#live-state")).to_have_class(re.compile(r"\bon\b"))
    pending = page.locator('[data-status="pending"]')
    before = int(pending.inner_text().replace(",", ""))
    app.lookup("notify").enqueue_many([(1000 + n,) for n in range(3)])
    expect(pending).to_have_text(f"{before + 3:,}", timeout=15_000)


def pages_forward_while_tasks_arrive(page: Page, app: App, base: str) -> None:
    present = {t.id for t in app.tasks.iter(topic="idle") if t.name == "notify"}
    page.goto(f"{base}/tasks?topic=idle&name=notify")
    seen = ids_on(page)
    assert len(seen) == 50
    batch = 0
    while page.locator("#older").count():
        batch += 1
        app.lookup("notify").enqueue_many([(2000 + batch * 10 + n,) for n in range(7)])
        page.click("#older")
        page.wait_for_load_state()
        seen += ids_on(page)
    assert batch >= 2
    assert len(seen) == len(set(seen)), "a task was shown twice"
    assert set(seen) == present, "a task was skipped, or a new one slipped in behind the cursor"


def failed_task_is_retried(page: Page, app: App, base: str) -> None:
    page.goto(f"{base}/tasks?status=failed&name=charge")
    rows = page.locator("tbody tr")
    expect(rows).to_have_count(5)
    expect(page.locator("tbody .badge")).to_have_text(["failed"] * 5)
    page.locator("tbody a.mono").first.click()
    expect(page.locator("pre.traceback")).to_contain_text("ValueError: card declined")
    task_id = page.locator("h1.mono").inner_text().split()[0]
    expect(page.locator("table.timeline tbody tr")).to_have_count(3)  # created, running, failed
    page.click("button:has-text('Retry')")
    expect(page.locator(".notice")).to_have_text("Retried 1 task.")
    history = [e.kind for e in app.tasks.history(task_id)]
    assert history[:4] == ["created", "running", "failed", "pending"]


def pending_task_is_cancelled(page: Page, app: App, base: str) -> None:
    task = app.tasks.list(topic="idle", status=Status.PENDING, limit=1)[0]
    page.goto(f"{base}/tasks/{task.id}")
    page.click("button:has-text('Cancel')")
    expect(page.locator(".notice")).to_have_text("Cancelled 1 task.")
    expect(page.locator("h1 .badge")).to_have_text("cancelled")
    assert app.tasks.get(task.id).status is Status.CANCELLED


def selection_is_cancelled(page: Page, app: App, base: str) -> None:
    page.goto(f"{base}/tasks?topic=idle&status=pending")
    boxes = page.locator('tbody input[name="id"]')
    chosen = [boxes.nth(0).get_attribute("value"), boxes.nth(1).get_attribute("value")]
    boxes.nth(0).check()
    boxes.nth(1).check()
    page.click("button[value=cancel]")
    expect(page.locator(".notice")).to_have_text("Cancelled 2 tasks.")
    assert all(app.tasks.get(str(i)).status is Status.CANCELLED for i in chosen)


def script_is_text(page: Page, base: str) -> None:
    page.goto(f"{base}/tasks?text=alert")
    expect(page.locator("td.desc")).to_have_text([SCRIPT])
    page.locator("tbody a.mono").first.click()
    expect(page.locator("dd.desc")).to_have_text(SCRIPT)


def test_the_dashboard_in_chromium(
    chromium: Browser, served: tuple[App, str], shots: Path, backend: str
) -> None:
    app, base = served
    context = chromium.new_context(viewport={"width": 1360, "height": 860})
    page = context.new_page()
    watch = Watch(page)
    log_in(page, base)
    page.screenshot(path=shots / f"tasks-failed-{backend}.png", full_page=True)
    overview_updates_by_itself(page, app, base)
    wait_for(lambda: app.reports.get("stuck"), "the observer's first report")
    for name in ["overview", "groups", "workers", "locks", "periodic", "reports"]:
        path = "/" if name == "overview" else f"/{name}"
        page.goto(base + path)
        expect(page.locator("h1")).to_be_visible()
        page.screenshot(path=shots / f"{name}-{backend}.png", full_page=True)
    expect(page.locator("section.report")).to_have_count(1)  # the observer ran its query
    pages_forward_while_tasks_arrive(page, app, base)
    failed_task_is_retried(page, app, base)
    page.screenshot(path=shots / f"task-{backend}.png", full_page=True)
    pending_task_is_cancelled(page, app, base)
    selection_is_cancelled(page, app, base)
    script_is_text(page, base)
    dark = chromium.new_context(viewport={"width": 1360, "height": 860}, color_scheme="dark")
    night = dark.new_page()
    night.goto(base + "/login")
    night.fill('input[name="token"]', TOKEN)
    night.click("button[type=submit]")
    expect(night.locator("h1")).to_have_text("Overview")
    night.screenshot(path=shots / f"overview-dark-{backend}.png", full_page=True)
    assert watch.problems == []
    context.close()
    dark.close()


@pytest.fixture
def mounted(store_url: str) -> Iterator[tuple[App, str]]:
    """The seeded store's dashboard mounted under ``/queue`` in an application
    of the user's (``examples/mounting.py``), served by uvicorn here, and the
    address of the mount."""
    import socket
    import threading

    import uvicorn

    from examples.mounting import starlette_site

    app = make_app(store_url)
    seed(app)
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    config = uvicorn.Config(starlette_site(app, TOKEN), log_level="warning", lifespan="off",
                            timeout_graceful_shutdown=1)  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]})
    thread.start()
    wait_for(lambda: server.started, "uvicorn to start")
    try:
        yield app, f"http://127.0.0.1:{listening.getsockname()[1]}/queue"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listening.close()
        app.close()


def test_the_dashboard_mounted_under_a_prefix_in_chromium(
    chromium: Browser, mounted: tuple[App, str]
) -> None:
    """Its styles and script load, the live stream connects and updates the
    overview, a cancel goes through, and the session stays under ``/queue``."""
    app, base = mounted
    context = chromium.new_context()
    page = context.new_page()
    watch = Watch(page)
    log_in(page, base)
    assert page.evaluate("getComputedStyle(document.querySelector('header.bar')).display") == "flex"
    overview_updates_by_itself(page, app, base)
    pending_task_is_cancelled(page, app, base)
    expect(page).to_have_url(re.compile(r"/queue/tasks/"))
    cookies = {cookie["name"]: cookie["path"] for cookie in context.cookies()}
    assert cookies["tenure_session"] == "/queue"
    assert watch.problems == []
    context.close()
