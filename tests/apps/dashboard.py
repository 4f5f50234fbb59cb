"""An App for the dashboard's tests: tasks a worker runs (topic ``work``: one
succeeds, one raises), tasks nobody runs (topic ``idle``), a group, a unique
task, a periodic task and an observer query, so that every page has something
real to show. ``app`` is one on $TENURE_URL, for ``tenure serve`` and
``tenure worker`` with ``--app tests.apps.dashboard:app``."""

from __future__ import annotations

import tenure
from tenure.store.types import WorkerInfo
from tests.conformance.support import reach

SCRIPT = "<script>alert(1)</script>"


def make_app(url: str | None = None) -> tenure.App:
    """A new App with the dashboard tests' tasks, on ``url``."""
    app = tenure.App(url)

    @app.task(name="resize", topic="work")
    def resize(image: str, width: int = 640) -> dict[str, object]:
        return {"image": image, "width": width}

    @app.task(name="charge", topic="work")
    def charge(order: int) -> None:
        raise ValueError(f"card declined for order {order}")

    @app.task(name="report", topic="idle", unique=tenure.Unique(lock="until_executed"))
    def report(day: str) -> None:
        """Nobody runs the idle topic: its tasks stay pending until cancelled."""

    @app.task(name="notify", topic="idle")
    def notify(user: int) -> None:
        """Never run in the tests: pending until cancelled."""

    app.periodic(3600, args=("logo.png",), name="hourly-logo")(resize)
    app.observe("stuck", status="pending", topic="idle", age=0, every=60)
    return app


app = make_app()


def seed(app: tenure.App, *, idle: int = 120) -> None:
    """The tasks the pages show: work for a worker to run (some fail), a group,
    ``idle`` pending tasks, a unique lock held, and one task whose description
    is a script."""
    resize = app.lookup("resize")
    for n in range(20):
        resize.options(description=f"thumbnail {n}").enqueue(f"photo-{n}.jpg")
    for n in range(5):
        app.lookup("charge").options(description=f"order {n}").enqueue(n)
    resize.options(group_id="album-7").enqueue_many([(f"album-{n}.jpg",) for n in range(8)])
    notify = app.lookup("notify")
    for n in range(idle):
        notify.options(description=f"remind user {n}").enqueue(n)
    notify.options(description=SCRIPT).enqueue(-1)
    app.lookup("report").enqueue("2026-11-23")
    reach(app.store, tenure.Status.SNOOZED, description="waiting on a partner")
    reach(app.store, tenure.Status.FAILED, description="failed before the worker came")


def beat(app: tenure.App) -> None:
    """A worker's heartbeat, for a workers page with one listed."""
    app.store.worker_beat(WorkerInfo(id="w-1", host="box", pid=42, topics=("work",)))
