"""A private store for each test, and eager mode: what a test needs around an App
that its own code declared at import time, pointed at the real store."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from tenure.testing.drain import draining, run_until_empty

if TYPE_CHECKING:
    from tenure.app import App
    from tenure.task import Task

MEMORY_URL = "sqlite:///:memory:"
"""A store private to one opening, gone when it closes (threads of the process
share it; other processes cannot see it)."""


@contextmanager
def isolated(app: App, url: str = MEMORY_URL) -> Iterator[App]:
    """``app`` pointed at the store ``url`` (a fresh private one by default) inside
    the block; afterwards that store is closed and the App is as it was, its own
    store (if it had opened one) untouched."""
    with app.using(url):
        yield app


@contextmanager
def eager(app: App, *, scheduled: bool = True) -> Iterator[App]:
    """Inside the block every enqueue of ``app`` (but one written on the caller's
    own connection, which nothing else can see before it commits) runs the queued
    tasks in the calling thread before it returns, as :func:`run_until_empty`
    does; the returned handles show the tasks as they ended."""

    def run(tasks: list[Task]) -> list[Task]:
        if draining(app):  # enqueued by a task being run: it runs after that one
            return tasks
        run_until_empty(app, scheduled=scheduled)
        return [app.store.task_get(task.id) or task for task in tasks]

    previous = app.on_enqueued
    app.on_enqueued = run
    try:
        yield app
    finally:
        app.on_enqueued = previous
