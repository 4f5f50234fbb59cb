"""An App traced with tenure.contrib.otel, for the tracing tests.

In a worker process (and in each of its pool children, which import this module
afresh) $TENURE_TEST_SPANS names a file: the OpenTelemetry SDK is set up here to
write every finished span to it as one JSON line, at once as the span ends, so
the test reads what each process traced. Without it (the test process) the App
traces to the global tracer provider, and the test swaps in its own middleware.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import tenure
from tenure.contrib.otel import instrument
from tenure.retry import Backoff


def span_record(span: ReadableSpan) -> dict[str, Any]:
    """A finished span as plain JSON values: what the tests compare."""
    context = span.get_span_context()
    assert context is not None
    return {
        "name": span.name,
        "trace_id": f"{context.trace_id:032x}",
        "span_id": f"{context.span_id:016x}",
        "parent_span_id": None if span.parent is None else f"{span.parent.span_id:016x}",
        "kind": span.kind.name,
        "status": span.status.status_code.name,
        "events": [{"name": e.name, "attributes": dict(e.attributes or {})} for e in span.events],
        "attributes": dict(span.attributes or {}),
        "pid": os.getpid(),
    }


class JsonLinesExporter(SpanExporter):
    """Appends each span to a file shared by the worker and its pool children:
    one ``write`` per line on a descriptor opened for appending, so lines from
    several processes never interleave."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        data = "".join(json.dumps(span_record(span)) + "\n" for span in spans).encode()
        descriptor = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(descriptor, data)
        finally:
            os.close(descriptor)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing is held open between exports."""


def worker_tracer_provider() -> TracerProvider | None:
    """The SDK provider writing to $TENURE_TEST_SPANS, or None where it is unset."""
    path = os.environ.get("TENURE_TEST_SPANS")
    if not path:
        return None
    provider = TracerProvider(resource=Resource.create({"service.name": "tenure-test-worker"}))
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(Path(path))))
    return provider


provider = worker_tracer_provider()
app = tenure.App()
tracing = instrument(app, tracer_provider=provider)
tracer = trace.get_tracer("tests.apps.traced", tracer_provider=provider)
QUICK = Backoff(base=0.05, maximum=0.1)


@app.task(topic="traced")
def succeeds(n: int) -> int:
    with tracer.start_as_current_span("work"):  # a span of the task's own
        return n * 2


@app.task(topic="traced")
async def awaits(n: int) -> int:
    with tracer.start_as_current_span("work"):  # in the event loop that runs it
        await asyncio.sleep(0)
        return n + 1


@app.task(topic="traced")
def fails() -> None:
    raise ValueError("bad input")


@app.task(topic="traced")
def snoozes(marker: str) -> str:
    if not Path(marker).exists():
        Path(marker).touch()
        raise tenure.Snooze(0.05)
    return "woken"


@app.task(topic="traced", retries=1, backoff=QUICK)
def retries(marker: str) -> str:
    if not Path(marker).exists():
        Path(marker).touch()
        raise tenure.Retry(in_=0.05, reason="not yet")
    return "retried"
