"""The App the benchmark enqueues to and its workers run: one no-op task.

The task does nothing, so what is measured is the queue (store round trips,
reserving, completing) and never the work. Worker processes import the
module-level ``app`` (``tenure worker --app benchmarks.suite.app:app --url ...``);
the measuring process builds its own with :func:`bench_app`, one per store URL,
so both sides know the task by the same name and topic.
"""

from __future__ import annotations

from tenure.app import App
from tenure.function import TaskFunction

APP_PATH = "benchmarks.suite.app:app"
TOPIC = "bench"
NAME = "benchmarks.suite.noop"


def noop() -> None:
    """Does nothing."""


def bench_app(url: str | None = None) -> tuple[App, TaskFunction[[], None]]:
    """A new App on ``url`` with the no-op task registered."""
    app = App(url)
    return app, app.task(name=NAME, topic=TOPIC)(noop)


app, _ = bench_app()
