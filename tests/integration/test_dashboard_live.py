"""The dashboard's live updates (tenure.http.dashboard.live), on SQLite and
PostgreSQL: one follower of the event log for every open tab, which stops when
the last tab goes away however it goes (even while the follower is starting),
which ends every tab's stream when it fails instead of leaving them waiting for
nothing, and a real ``tenure serve`` that stops within its grace period with a
tab open."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import re
import threading
import time
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Message

from tenure import App
from tenure.errors import StoreError
from tenure.function import TaskFunction
from tenure.http import create_app
from tenure.http.dashboard import live
from tests.apps.dashboard import make_app
from tests.integration.workers import WorkerProcess

CHANGE = "event: change\ndata: {}\n\n"
BASE = "http://127.0.0.1:8765"


@pytest.fixture
def app(store_url: str) -> Iterator[App]:
    built = make_app(store_url)
    yield built
    built.close()


class Reads:
    """Counts the reads of the event log (``store.event_page``) from now on."""

    def __init__(self, app: App, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.broken = threading.Event()
        original = app.store.event_page

        def page(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            if self.broken.is_set():
                raise StoreError("the event log cannot be read")
            return original(*args, **kwargs)

        monkeypatch.setattr(app.store, "event_page", page)


async def hold_live(asgi: ASGIApp, seconds: float) -> list[Message]:
    """Open ``/live`` as a browser tab would, and go away after ``seconds``."""
    scope = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1", "method": "GET", "scheme": "http", "path": "/live",
        "raw_path": b"/live", "query_string": b"", "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8765")],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8765),
    }  # fmt: skip
    asked = False
    sent: list[Message] = []

    async def receive() -> Message:
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.sleep(seconds)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    await asyncio.wait_for(asgi(scope, receive, send), 10)
    return sent


@pytest.mark.parametrize("held", [0.1, 1.5], ids=["while-starting", "while-following"])
def test_a_tab_that_goes_away_leaves_and_the_follower_stops(
    app: App, held: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tab that closes while the follower is still starting (a slow store),
    or once it follows, leaves: no tab is left, and the log is not read for
    nobody (each page view used to leave a listener behind, for ever)."""
    original_tail = app.store.event_tail

    def slow_tail(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.5)
        return original_tail(*args, **kwargs)

    monkeypatch.setattr(app.store, "event_tail", slow_tail)
    reads = Reads(app, monkeypatch)
    asgi = create_app(app, token=None, insecure=True)

    async def scenario() -> tuple[list[Message], int]:
        sent = await hold_live(asgi, held)
        await asyncio.sleep(1.0)  # a follower still starting has started by now
        before = reads.count
        await asyncio.sleep(2.5)  # a follower polls at least every second
        return sent, reads.count - before

    sent, later = asyncio.run(scenario())
    assert later == 0, "the event log is still followed with no tab open"
    assert sent[0]["status"] == 200
    assert sent[1]["body"] == b"retry: 2000\n\n"


class Tab:
    """A browser tab reading one stream on a task of its own, so that waiting
    for what it hears, with a time limit, never cancels the stream itself."""

    def __init__(self, broadcaster: live.Broadcaster, task_id: str | None = None) -> None:
        self.heard: asyncio.Queue[str | None] = asyncio.Queue()
        self._reading = asyncio.create_task(self._read(broadcaster.stream(task_id)))

    async def _read(self, stream: AsyncGenerator[str, None]) -> None:
        try:
            async for chunk in stream:
                if not chunk.startswith(":"):  # keep-alive comments aside
                    await self.heard.put(chunk)
        finally:
            await self.heard.put(None)  # the stream ended

    async def next(self, timeout: float) -> str | None:
        """What the tab hears next (``None``: its stream ended); ``TimeoutError``
        if nothing within ``timeout`` seconds."""
        return await asyncio.wait_for(self.heard.get(), timeout)

    async def close(self) -> None:
        self._reading.cancel()
        await asyncio.gather(self._reading, return_exceptions=True)


async def heard_of_new_tasks(tab: Tab, function: TaskFunction[..., Any]) -> None:
    """Enqueue tasks until ``tab`` hears of one: its follower has found where
    the log ended when it started, and follows it."""
    for _ in range(20):
        await asyncio.to_thread(function.enqueue, 1)
        with contextlib.suppress(TimeoutError):
            assert await tab.next(0.5) == CHANGE
            return
    raise AssertionError("no change told of new tasks")


def test_a_follower_that_fails_ends_every_stream_and_the_next_tab_starts_another(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tabs are told to come back later instead of waiting on a follower that
    is gone (they used to hear nothing but keep-alives until their stream's
    end, minutes later); when they do, a new follower serves them."""
    monkeypatch.setattr(live, "KEEPALIVE", 0.2)
    reads = Reads(app, monkeypatch)
    broadcaster = live.Broadcaster(lambda: app.events)
    notify = app.lookup("notify")

    async def scenario() -> None:
        tabs = [Tab(broadcaster), Tab(broadcaster)]
        for tab in tabs:
            assert await tab.next(5) == "retry: 2000\n\n"
        reads.broken.set()
        for tab in tabs:
            assert await tab.next(5) == f"retry: {int(live.RETRY_LATER * 1000)}\n\n"
            assert await tab.next(1) is None
        reads.broken.clear()
        again = Tab(broadcaster)
        assert await again.next(5) == "retry: 2000\n\n"
        await heard_of_new_tasks(again, notify)
        await again.close()

    asyncio.run(scenario())


def test_each_tab_hears_of_the_tasks_it_shows(app: App) -> None:
    """A task's page hears of that task only; the other pages of any task."""
    broadcaster = live.Broadcaster(lambda: app.events)
    notify = app.lookup("notify")
    mine, theirs = notify.enqueue(1), notify.enqueue(2)

    async def scenario() -> None:
        one, every = Tab(broadcaster, mine.id), Tab(broadcaster)
        assert await one.next(5) == await every.next(5) == "retry: 2000\n\n"
        await heard_of_new_tasks(every, notify)
        await asyncio.sleep(live.PAUSE * 2)
        while not every.heard.empty():
            every.heard.get_nowait()
        await asyncio.to_thread(app.tasks.cancel, theirs.id)
        assert await every.next(5) == CHANGE
        with pytest.raises(TimeoutError):
            await one.next(1.5)
        await asyncio.to_thread(app.tasks.cancel, mine.id)
        assert await one.next(5) == CHANGE
        await one.close()
        await every.close()

    asyncio.run(scenario())


def closed(answer: http.client.HTTPResponse) -> bool:
    """Whether the stream ends (cut short or not) before the socket's timeout."""
    try:
        while answer.read1(1000):
            pass
    except (http.client.IncompleteRead, ConnectionError):
        pass
    except TimeoutError:
        return False
    return True


def test_a_server_with_a_tab_open_ends_its_stream_and_stops(store_url: str) -> None:
    """At a stop the server ends each tab's stream itself, telling the browser to
    come back later, rather than waiting out uvicorn's grace period (3 s) for
    streams that would then be cancelled with errors in the log; the follower
    stops, and the command ends with 0."""
    server = WorkerProcess(
        store_url, "--port", "0", "--insecure", command="serve",
        app="tests.apps.dashboard:app", ready="HTTP API of",
    )  # fmt: skip
    try:
        found = re.search(r"http://[\d.]+:(\d+)/api", server.wait_for_log("HTTP API of"))
        assert found
        tab = http.client.HTTPConnection("127.0.0.1", int(found.group(1)), timeout=15)
        tab.request("GET", "/live")
        answer = tab.getresponse()
        assert answer.status == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        assert answer.read1(100) == b"retry: 2000\n\n"
        server.signal()
        assert answer.read1(100) == f"retry: {int(live.RETRY_LATER * 1000)}\n\n".encode()
        assert server.wait_exit(15) == 0
        assert closed(answer), "the tab's stream is still open"
        tab.close()
        assert not [line for line in server.lines if "ERROR" in line or "Cancelled" in line]
    finally:
        server.stop()


@pytest.mark.timeout(30)
def test_a_head_request_holds_no_stream_open(app: App) -> None:
    """HEAD gets the headers at once (it used to hold a stream, and a place
    among the listeners, for the stream's whole lifetime with no body to send)."""
    with TestClient(create_app(app, token=None, insecure=True), base_url=BASE) as client:
        began = time.monotonic()
        answer = client.head("/live")
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        assert time.monotonic() - began < 5
