"""tenure.contrib.otel with the real OpenTelemetry SDK: the trace context a task
carries from its enqueue, and the consumer span a real worker process (or its
pool child) starts from it, child of the producer span in another process."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import tenure
from tenure import Status, Store, Task
from tenure.contrib.otel import TracingMiddleware, instrument
from tests.apps import traced
from tests.integration.workers import WorkerProcess, enqueue, finished, wait_for, wait_until

Tracing = tuple[TracerProvider, InMemorySpanExporter]


@pytest.fixture
def tracing() -> Iterator[Tracing]:
    """An SDK tracer provider of the test process, keeping finished spans in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def traceparent_of(task: Task) -> tuple[str, str]:
    """The trace id and parent span id of the W3C ``traceparent`` ``task`` carries."""
    version, trace_id, span_id, flags = task.data["headers"]["traceparent"].split("-")
    assert version == "00" and int(flags, 16) & 1  # sampled
    return trace_id, span_id


def ids(span: Any) -> tuple[str, str]:
    context = span.get_span_context()
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def test_enqueue_sends_the_producer_span_as_traceparent(store_url: str, tracing: Tracing) -> None:
    provider, exporter = tracing
    app = tenure.App(store_url)

    @app.task(name="add", topic="maths")
    def add(a: int, b: int) -> int:
        return a + b

    middleware = instrument(app, tracer_provider=provider)
    assert instrument(app) is middleware and app.middleware == [middleware]
    request = provider.get_tracer("test").start_as_current_span("request")
    try:
        with request as parent:
            handle = add.enqueue(1, 2)
            [producer] = exporter.get_finished_spans()
        assert producer.name == "enqueue add" and producer.kind is SpanKind.PRODUCER
        assert producer.parent is not None
        assert producer.parent.span_id == parent.get_span_context().span_id
        assert producer.attributes == {
            "messaging.system": "tenure",
            "messaging.operation.type": "create",
            "messaging.operation.name": "enqueue",
            "tenure.task.name": "add",
        }
        stored = app.tasks.get(handle.id)
        assert traceparent_of(stored) == ids(producer)
        assert stored.data["args"] == [1, 2]

        # One producer span, one trace context, per task of a batch.
        exporter.clear()
        batch = add.enqueue_many([(1, 1), (2, 2)])
        spans = exporter.get_finished_spans()
        assert [s.name for s in spans] == ["enqueue add", "enqueue add"]
        assert [traceparent_of(app.tasks.get(h.id)) for h in batch] == [ids(s) for s in spans]
    finally:
        app.close()


def running(data: dict[str, Any], attempts: int = 1) -> Task:
    now = datetime.now(UTC)
    return Task("t-1", "maths", "add", Status.RUNNING, data, attempts=attempts, started_at=now)


def test_execute_continues_the_trace_and_tells_errors_from_control_flow(
    tracing: Tracing,
) -> None:
    provider, exporter = tracing
    middleware = TracingMiddleware(provider)
    headers: dict[str, str] = {}
    middleware.enqueue("add", headers)
    [producer] = exporter.get_finished_spans()
    task = running({"args": [], "headers": headers}, attempts=2)

    with middleware.execute(task):
        inner = provider.get_tracer("test").start_span("inside")
        inner.end()
    with pytest.raises(ValueError, match="bad"), middleware.execute(task):
        raise ValueError("bad")
    with pytest.raises(tenure.Snooze), middleware.execute(task):
        raise tenure.Snooze(3)
    with pytest.raises(tenure.Retry), middleware.execute(task):
        raise tenure.Retry(in_=5, reason="later")
    with middleware.execute(running({"args": []})):  # enqueued without the middleware
        pass

    inside, ok, bad, nap, again, untraced = exporter.get_finished_spans()[1:]
    for span in (ok, bad, nap, again):
        assert span.name == "run add" and span.kind is SpanKind.CONSUMER
        assert span.parent is not None and span.parent.span_id == producer.context.span_id
        assert span.context.trace_id == producer.context.trace_id
    assert inside.parent is not None and inside.parent.span_id == ok.context.span_id
    assert ok.attributes is not None and ok.attributes["tenure.task.attempt"] == 2
    assert ok.attributes["messaging.destination.name"] == "maths"
    assert ok.attributes["messaging.message.id"] == "t-1"
    assert ok.status.status_code is StatusCode.UNSET and not ok.events

    assert bad.status.status_code is StatusCode.ERROR
    assert bad.status.description == "ValueError: bad"
    [event] = bad.events
    assert event.name == "exception" and event.attributes is not None
    assert event.attributes["exception.type"] == "ValueError"

    assert nap.status.status_code is StatusCode.UNSET
    assert nap.attributes is not None and nap.attributes["tenure.control"] == "snooze"
    assert [(e.name, dict(e.attributes or {})) for e in nap.events] == [
        ("tenure.snooze", {"tenure.snooze.seconds": 3})
    ]
    assert again.status.status_code is StatusCode.UNSET
    assert [(e.name, dict(e.attributes or {})) for e in again.events] == [
        ("tenure.retry", {"tenure.retry.reason": "later", "tenure.retry.delay": 5})
    ]
    assert untraced.parent is None and untraced.context.trace_id != producer.context.trace_id


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


def test_tenure_never_imports_opentelemetry() -> None:
    loaded = python(
        "import sys, tenure, tenure.worker, tenure.cli, tenure.contrib\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"


def test_without_the_extra_the_import_error_says_what_to_install() -> None:
    # None in sys.modules makes `import opentelemetry` fail, as if not installed.
    missing = python("import sys; sys.modules['opentelemetry'] = None\nimport tenure.contrib.otel")
    assert missing.returncode == 1
    last = missing.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: tenure.contrib.otel needs OpenTelemetry")
    assert "pip install 'tenure[otel]'" in last


def read_spans(path: Path) -> list[dict[str, Any]]:
    """The spans written so far (a line still being written is left for later)."""
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]


def consumers(spans: list[dict[str, Any]], task: Task) -> list[dict[str, Any]]:
    """The ``run`` spans of ``task``'s executions, in the order they ended (each
    is appended to the file as it ends)."""
    return [s for s in spans if s["attributes"].get("messaging.message.id") == task.id]


def every_span(path: Path, executions: list[tuple[Task, int]]) -> list[dict[str, Any]] | None:
    """The spans in ``path`` once it has a consumer span for every execution
    counted in ``executions``; None until then."""
    spans = read_spans(path)
    if all(len(consumers(spans, task)) == n for task, n in executions):
        return spans
    return None


@pytest.mark.slow
@pytest.mark.parametrize("pool", ["threads", "async", "processes"])
def test_a_worker_continues_the_trace_of_the_enqueuing_process(
    store: Store,
    store_url: str,
    tracing: Tracing,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    pool: str,
) -> None:
    provider, exporter = tracing
    # This process traces its enqueues in memory; the worker, to the JSON lines file.
    monkeypatch.setattr(traced.app.registry, "middleware", [TracingMiddleware(provider)])
    ok = enqueue(store, traced.succeeds, 21)
    awaited = enqueue(store, traced.awaits, 41)
    bad = enqueue(store, traced.fails)
    nap = enqueue(store, traced.snoozes, str(tmp_path / "snoozed"))
    again = enqueue(store, traced.retries, str(tmp_path / "retried"))
    producers = {ids(s): s for s in exporter.get_finished_spans()}
    assert {s.kind for s in producers.values()} == {SpanKind.PRODUCER}

    path = tmp_path / "spans.jsonl"
    worker = WorkerProcess(
        store_url,
        "--pool",
        pool,
        app="tests.apps.traced:app",
        env={"TENURE_TEST_SPANS": str(path)},
    )
    try:
        assert wait_until(store, ok.id, finished).result == 42
        assert wait_until(store, awaited.id, finished).result == 42
        assert wait_until(store, bad.id, finished).status is Status.FAILED
        assert wait_until(store, nap.id, finished).result == "woken"
        assert wait_until(store, again.id, finished).result == "retried"
        executions = [(ok, 1), (awaited, 1), (bad, 1), (nap, 2), (again, 2)]
        spans = wait_for(lambda: every_span(path, executions), "the worker's consumer spans")
    finally:
        worker.stop()

    assert_continued(
        spans,
        producers,
        [ok, awaited, bad, nap, again],
        in_worker=pool != "processes",
        worker_pid=worker.pid,
    )
    assert_endings(spans, ok=ok, awaited=awaited, bad=bad, nap=nap, again=again)


def assert_continued(
    spans: list[dict[str, Any]],
    producers: dict[tuple[str, str], Any],
    tasks: list[Task],
    *,
    in_worker: bool,
    worker_pid: int,
) -> None:
    """Each execution of ``tasks`` ran in a consumer span, child of the producer
    span of its enqueue, made in the worker itself or else in a pool child."""
    for task in tasks:
        producer = producers[traceparent_of(task)]
        assert producer.name == f"enqueue {task.name}"
        for span in consumers(spans, task):
            assert span["name"] == f"run {task.name}" and span["kind"] == "CONSUMER"
            assert span["trace_id"] == f"{producer.context.trace_id:032x}"
            assert span["parent_span_id"] == f"{producer.context.span_id:016x}"
            # The span is made where the function runs: a pool child, or the worker.
            assert (span["pid"] == worker_pid) == in_worker


def assert_endings(
    spans: list[dict[str, Any]], *, ok: Task, awaited: Task, bad: Task, nap: Task, again: Task
) -> None:
    """Each consumer span says how its execution ended: an error is an error,
    Retry and Snooze are marked but are not."""
    # The function's own spans are children of its run span, async def ones too.
    works = {s["parent_span_id"]: s for s in spans if s["name"] == "work"}
    for task in (ok, awaited):
        [run] = consumers(spans, task)
        assert run["status"] == "UNSET" and run["events"] == []
        assert works[run["span_id"]]["pid"] == run["pid"]
    assert len(works) == 2

    [run_bad] = consumers(spans, bad)
    assert run_bad["status"] == "ERROR"
    [exception] = run_bad["events"]
    assert exception["name"] == "exception"
    assert exception["attributes"]["exception.type"] == "ValueError"
    assert "bad input" in exception["attributes"]["exception.message"]

    snoozed, woken = consumers(spans, nap)
    assert snoozed["status"] == "UNSET" and snoozed["attributes"]["tenure.control"] == "snooze"
    assert [e["name"] for e in snoozed["events"]] == ["tenure.snooze"]
    assert woken["status"] == "UNSET" and woken["events"] == []

    retried, succeeded = consumers(spans, again)
    assert retried["status"] == "UNSET" and retried["attributes"]["tenure.control"] == "retry"
    assert retried["events"] == [
        {
            "name": "tenure.retry",
            "attributes": {"tenure.retry.reason": "not yet", "tenure.retry.delay": 0.05},
        }
    ]
    assert succeeded["status"] == "UNSET" and succeeded["attributes"]["tenure.task.attempt"] == 2


INCOMING_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
INCOMING_SPAN = "00f067aa0ba902b7"
INCOMING = f"00-{INCOMING_TRACE}-{INCOMING_SPAN}-01"


def posted(app: tenure.App, traceparent: str) -> Task:
    """The task ``POST /api/tasks`` made for a request with this ``traceparent``
    (and a ``tracestate``)."""
    from starlette.testclient import TestClient

    from tenure.http import create_app

    token = "t" * 16
    auth = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(app, token=token), headers=auth) as client:
        trace = {"traceparent": traceparent, "tracestate": "vendor=abc"}
        created = client.post("/api/tasks", json={"name": "add", "args": [1, 2]}, headers=trace)
    assert created.status_code == 201, created.text
    return app.tasks.get(created.json()["id"])


@pytest.fixture
def api_app(store_url: str) -> Iterator[tenure.App]:
    app = tenure.App(store_url)

    @app.task(name="add")
    def add(a: int, b: int) -> int:
        return a + b

    yield app
    app.close()


def test_an_untraced_server_passes_the_requests_trace_on_to_the_task(api_app: tenure.App) -> None:
    task = posted(api_app, INCOMING)
    assert task.data["headers"] == {"traceparent": INCOMING, "tracestate": "vendor=abc"}
    # A malformed one is ignored, as the specification says: no headers at all.
    assert "headers" not in posted(api_app, "00-garbage").data


def test_a_traced_server_enqueues_in_the_requests_trace(
    api_app: tenure.App, tracing: Tracing
) -> None:
    provider, exporter = tracing
    instrument(api_app, tracer_provider=provider)
    task = posted(api_app, INCOMING)
    [producer] = exporter.get_finished_spans()
    assert producer.parent is not None
    parent = (f"{producer.parent.trace_id:032x}", f"{producer.parent.span_id:016x}")
    assert parent == (INCOMING_TRACE, INCOMING_SPAN)
    assert traceparent_of(task) == ids(producer)
    assert task.data["headers"]["tracestate"] == "vendor=abc"
    exporter.clear()
    untraced = posted(api_app, "00-garbage")  # ignored: the producer span starts a trace
    [root] = exporter.get_finished_spans()
    assert root.parent is None and traceparent_of(untraced)[0] != INCOMING_TRACE


def test_the_headers_option_refuses_what_is_not_text(store_url: str) -> None:
    app = tenure.App(store_url)

    @app.task(name="add")
    def add(a: int, b: int) -> int:
        return a + b

    try:
        with pytest.raises(tenure.InvalidInput, match="headers: must map strings to strings"):
            add.options(headers={"traceparent": 1}).enqueue(1, 2)  # type: ignore[dict-item]
    finally:
        app.close()
