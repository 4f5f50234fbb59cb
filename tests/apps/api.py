"""An App for the HTTP API's tests: a few tasks declared with topics, retries,
priorities and uniqueness, so that an enqueue over HTTP can be seen to take them
from the declaration. ``make_app(url)`` builds a fresh App on a test's store;
``app`` is one on $TENURE_URL, for ``tenure serve --app tests.apps.api:app``;
``python -m tests.apps.api serve …`` runs that command."""

from __future__ import annotations

from typing import Any

import tenure
from tenure.store.types import WorkerInfo
from tests.conformance.support import reach


def make_app(url: str | None = None) -> tenure.App:
    """A new App with the API tests' tasks, on ``url``."""
    app = tenure.App(url)

    @app.task(name="add", topic="math", retries=2, timeout=30)
    def add(a: int, b: int) -> int:
        return a + b

    @app.task(name="send-email", topic="mail", sub_topic="transactional", priority=3)
    def send_email(to: str, subject: str = "", *, urgent: bool = False) -> dict[str, Any]:
        return {"to": to, "subject": subject, "urgent": urgent}

    @app.task(name="flexible", topic="misc")
    def flexible(*args: Any, **kwargs: Any) -> None:
        """Takes anything: for arguments the signature cannot refuse."""

    @app.task(name="nightly-report", topic="reports", unique=tenure.Unique(lock="until_executed"))
    def nightly_report(day: str) -> None:
        """At most one per day at a time: a second enqueue is rejected."""

    @app.task(
        name="exclusive-sync",
        topic="reports",
        unique=tenure.Unique(lock="until_executing", on_conflict="raise"),
    )
    def exclusive_sync(source: str) -> None:
        """A second enqueue while one waits raises UniqueConflict."""

    return app


app = make_app()


def seed(app: tenure.App) -> None:
    """Tasks in every status (with results, errors and leases), a live worker
    and a schedule, so that listings and stats answer with the real thing."""
    for status in tenure.Status:
        reach(app.store, status, group_id="seeded", description="seeded task")
    app.lookup("send-email").options(delay=60).enqueue("ada@example.com", subject="hi")
    app.store.worker_beat(WorkerInfo(id="w-1", host="box", pid=42, topics=("math",)))
    app.schedules.add("seeded-sums", "add", 300, args=[1, 2])
