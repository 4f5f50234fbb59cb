"""What each page of the dashboard shows, read from the store: plain functions
from the query string and the App to the values a template renders.

Every read is bounded, so that a page answers in a few milliseconds with a
million tasks: counts come from the store's tallies, listings are keyset pages
that examine at most :data:`SCAN` tasks, groups are those of the newest tasks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tenure.admin import TaskAdmin
from tenure.app import App
from tenure.errors import InvalidInput
from tenure.http.dashboard import charts
from tenure.store import TaskFilter
from tenure.store.validate import status as check_status
from tenure.task import FINISHED, RETRYABLE, Status

PAGE_SIZE = 50
SCAN = 50_000
"""Tasks a listing page examines at most, whatever its filters."""

WINDOW = 3600.0
"""Seconds of endings the overview counts and charts."""

FILTERS = ("status", "topic", "sub_topic", "name", "group", "text", "meta")
MAX_FILTER = 500
Context = dict[str, Any]


def flow(admin: TaskAdmin) -> dict[str, list[str]]:
    """Each topic's limit, rate and ageing, as short notes."""
    notes: dict[str, list[str]] = {}
    for limit in admin.limits():
        notes.setdefault(limit.topic, []).append(f"at most {limit.max_running} running")
    for rate in admin.rate_limits():
        notes.setdefault(rate.topic, []).append(
            f"at most {rate.max_starts} starts per {rate.per_seconds:g} s"
        )
    for ageing in admin.ageings():
        notes.setdefault(ageing.topic, []).append(
            f"+1 priority per {ageing.every_seconds:g} s waited, at most +{ageing.most}"
        )
    return notes


def overview(app: App) -> Context:
    """Counts by topic and status, the last hour's endings, the oldest waits,
    which topics are paused, and what else holds or orders their tasks."""
    admin = app.tasks
    stats = admin.stats(window=WINDOW)
    rates = admin.rates(minutes=int(WINDOW // 60))
    paused = {topic.topic: topic.paused_at for topic in admin.paused()}
    notes = flow(admin)
    topics = sorted(set(stats.counts) | set(stats.endings) | set(paused) | set(notes))
    totals = {status: stats.total(status) for status in Status}
    return {
        "stats": stats,
        "topics": topics,
        "paused": paused,
        "flow": notes,
        "totals": totals,
        "throughput": charts.throughput(rates),
        "failures": charts.failure_rate(rates),
        "workers": len(admin.workers()),
        "now": stats.at,
    }


@dataclass(frozen=True)
class Listing:
    """The tasks page's query: its filters as given, and where the page starts."""

    given: dict[str, str]
    filters: TaskFilter
    cursor: str | None


def listing(query: Mapping[str, str]) -> Listing:
    """The tasks page's filters from its query string; ``InvalidInput`` naming
    the parameter if one is unusable."""
    given = {key: query[key].strip() for key in FILTERS if query.get(key, "").strip()}
    for key, value in given.items():
        if len(value) > MAX_FILTER:
            raise InvalidInput(key, f"at most {MAX_FILTER} characters")
    status = given.get("status")
    filters = TaskFilter(
        status=None if status is None else check_status(status),
        topic=given.get("topic"),
        sub_topic=given.get("sub_topic"),
        name=given.get("name"),
        group_id=given.get("group"),
        text=given.get("text"),
        meta=_meta_pair(given.get("meta")),
    )
    return Listing(given, filters, query.get("after") or None)


def _meta_pair(given: str | None) -> tuple[tuple[str, str], ...] | None:
    """The meta filter's ``name=value``, as the one pair a task's meta must hold."""
    if given is None:
        return None
    name, equals, value = given.partition("=")  # as tenure tasks --meta reads it
    if not equals or not name:
        raise InvalidInput("meta", "name=value, such as customer=c-42")
    return ((name, value),)


def tasks(app: App, wanted: Listing) -> Context:
    """One page of tasks, newest first, and the cursor of the next."""
    admin = app.tasks
    page = admin.page(wanted.filters, cursor=wanted.cursor, limit=PAGE_SIZE, scan=SCAN)
    return {
        "tasks": page.tasks,
        "cursor": page.cursor,
        "short": page.cursor is not None and len(page.tasks) < PAGE_SIZE,
        "given": wanted.given,
        "first": wanted.cursor is None,
        "scan": SCAN,
        "now": admin.store.clock_now(),
    }


def task(app: App, id_or_prefix: str) -> Context:
    """One task, every field, and its timeline."""
    admin = app.tasks
    found = admin.resolve(id_or_prefix)
    history = admin.history(found.id)
    steps = []
    for before, event in zip([None, *history], history, strict=False):
        gap = None if before is None else (event.at - before.at).total_seconds()
        steps.append((event, gap))
    store = admin.store
    return {
        "task": found,
        "steps": steps,
        "waits_for": None if found.gate_in is None else store.gate_get(found.gate_in),
        "counted_by": None if found.gate_out is None else store.gate_get(found.gate_out),
        "can_retry": found.status in RETRYABLE,
        "can_cancel": found.status not in FINISHED,
        "now": admin.store.clock_now(),
    }


def groups(app: App) -> Context:
    """The groups of the newest tasks, with their progress."""
    admin = app.tasks
    found = admin.groups(limit=PAGE_SIZE, scan=SCAN * 2)
    return {"groups": found, "scan": SCAN * 2, "now": admin.store.clock_now()}


def workers(app: App) -> Context:
    """The live workers, as their last heartbeat said."""
    admin = app.tasks
    return {"workers": admin.workers(), "now": admin.store.clock_now()}


def locks(app: App) -> Context:
    """The unique locks held now."""
    admin = app.tasks
    return {"locks": admin.locks(limit=PAGE_SIZE * 10), "now": admin.store.clock_now()}


def periodic(app: App) -> Context:
    """Every schedule, declared or added at run time, its next and last ticks."""
    store = app.store
    return {"states": app.schedules.all(), "now": store.clock_now()}


def reports(app: App) -> Context:
    """The observer's latest report per query."""
    return {"reports": app.reports.list(), "now": app.store.clock_now()}
