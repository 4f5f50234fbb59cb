"""OpenTelemetry tracing for tenure: one trace from where a task is enqueued to
where it runs, across processes and hours.

A task is enqueued in one process (a web request, a script) and runs in another,
a worker or one of its pool children, maybe much later. Nothing but the stored
task connects the two, so this module makes the task carry the trace: its
:class:`TracingMiddleware` writes the W3C trace context into the task's headers
as it is enqueued, and the worker continues that trace around each execution.
It needs only the OpenTelemetry API (``pip install 'tenure[otel]'``); the SDK,
exporters and sampling are configured by the application, as for any other
instrumentation::

    import tenure
    from tenure.contrib.otel import instrument

    app = tenure.App()
    instrument(app)  # or instrument(app, tracer_provider=provider)

Instrument the App in the module that defines it, so that both the enqueuing
process and the worker (``tenure worker --app module:app``) run the middleware.
With ``--pool processes`` each pool child imports that module afresh: configure
the SDK at import time there too, and prefer an exporter that does not lose
spans when an abandoned execution's child is killed (``SimpleSpanProcessor``
exports as each span ends; ``BatchSpanProcessor`` flushes at a normal exit).

What it records:

- ``enqueue <task name>``, a PRODUCER span, child of whatever span is current
  when the task is enqueued, or of the trace context the enqueue was given
  (``.options(headers={"traceparent": ...})``, as ``POST /api/tasks`` passes
  on its request's): the creation context of the task (one per task,
  ``enqueue_many`` included). It ends as the task is built, before it is stored.
- ``run <task name>``, a CONSUMER span around each execution, where the
  function runs, child of the task's producer span (every attempt of a task has
  the same parent). Spans the function starts are its children. An exception
  the function raises is recorded on it and sets its status to ERROR;
  ``tenure.Retry`` and ``tenure.Snooze`` are not errors: they add a
  ``tenure.retry`` / ``tenure.snooze`` event and the ``tenure.control``
  attribute, and leave the status unset.

Attributes follow the messaging semantic conventions (``messaging.system`` is
``tenure``, ``messaging.destination.name`` the topic, ``messaging.message.id``
the task id), with ``tenure.task.name`` and ``tenure.task.attempt`` beside them.
A task enqueued without the middleware (no headers) runs in a root span.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager

try:
    from opentelemetry import propagate, trace
    from opentelemetry.trace import Span, SpanKind, Status, StatusCode
except ImportError as exc:  # pragma: no cover - tested in a process without the extra
    raise ImportError(
        "tenure.contrib.otel needs OpenTelemetry, which tenure does not install by "
        "default: pip install 'tenure[otel]'"
    ) from exc

from tenure import __version__
from tenure.app import App
from tenure.control import ControlFlow, Retry, Snooze
from tenure.hooks import Middleware
from tenure.task import Task

__all__ = ["TracingMiddleware", "instrument"]

SCOPE = "tenure.contrib.otel"
"""The instrumentation scope of the spans this module starts."""
SYSTEM = "tenure"


class TracingMiddleware(Middleware):
    """Starts a producer span for each task enqueued, and a consumer span, its
    child, around each execution (see the module's description).

    ``tracer_provider`` defaults to the global one; the middleware may be
    created before it is set (OpenTelemetry's proxy tracer follows it)."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self._tracer = trace.get_tracer(SCOPE, __version__, tracer_provider)

    def enqueue(self, name: str, headers: dict[str, str]) -> None:
        attributes = {
            "messaging.system": SYSTEM,
            "messaging.operation.type": "create",
            "messaging.operation.name": "enqueue",
            "tenure.task.name": name,
        }
        # A caller's trace context given with the enqueue (an API request's
        # traceparent) is the parent; else the current span, if any.
        parent = propagate.extract(headers) if "traceparent" in headers else None
        with self._tracer.start_as_current_span(
            f"enqueue {name}", context=parent, kind=SpanKind.PRODUCER, attributes=attributes
        ):
            propagate.inject(headers)

    def execute(self, task: Task) -> AbstractContextManager[object]:
        return self._run(task)

    @contextmanager
    def _run(self, task: Task) -> Iterator[None]:
        with self._tracer.start_as_current_span(
            f"run {task.name}",
            context=propagate.extract(headers_of(task)),
            kind=SpanKind.CONSUMER,
            attributes=consumer_attributes(task),
            # Retry and Snooze are not errors: _ended decides what an exception is.
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                yield
            except BaseException as exc:
                _ended(span, exc)
                raise


def headers_of(task: Task) -> Mapping[str, str]:
    """What the middleware added to ``task`` when it was enqueued (maybe nothing)."""
    found = task.data.get("headers") if isinstance(task.data, dict) else None
    return found if isinstance(found, dict) else {}


def consumer_attributes(task: Task) -> dict[str, str | int]:
    return {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "process",
        "messaging.operation.name": "run",
        "messaging.destination.name": task.topic,
        "messaging.message.id": task.id,
        "tenure.task.name": task.name,
        "tenure.task.attempt": task.attempts,
        "tenure.task.max_attempts": task.max_attempts,
    }


def _ended(span: Span, exc: BaseException) -> None:
    """Mark ``span`` with how the execution ended when the function raised ``exc``."""
    if isinstance(exc, Snooze):
        span.set_attribute("tenure.control", "snooze")
        span.add_event("tenure.snooze", {"tenure.snooze.seconds": exc.seconds})
    elif isinstance(exc, Retry):
        span.set_attribute("tenure.control", "retry")
        event: dict[str, str | float] = {"tenure.retry.reason": str(exc)}
        if exc.in_ is not None:
            event["tenure.retry.delay"] = exc.in_
        span.add_event("tenure.retry", event)
    elif isinstance(exc, ControlFlow):
        span.set_attribute("tenure.control", type(exc).__name__)
    elif isinstance(exc, asyncio.CancelledError):
        # The worker abandoned the coroutine (a cancelled task, a timeout): the
        # worker says why; the function itself did not fail.
        span.add_event("tenure.cancelled")
    elif isinstance(exc, Exception | KeyboardInterrupt | SystemExit):
        # KeyboardInterrupt and SystemExit fail the attempt too, so they count.
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        span.set_attribute("error.type", type(exc).__qualname__)


def instrument(app: App, tracer_provider: trace.TracerProvider | None = None) -> TracingMiddleware:
    """Trace ``app``'s tasks from enqueue to run: add a :class:`TracingMiddleware`
    to it and return it. An App that has one already keeps it (two would start
    every span twice), and it is returned."""
    for each in app.middleware:
        if isinstance(each, TracingMiddleware):
            return each
    middleware = TracingMiddleware(tracer_provider)
    app.add_middleware(middleware)
    return middleware
