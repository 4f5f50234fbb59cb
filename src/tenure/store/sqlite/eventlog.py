"""The SQLite store's event log, reports and operator's reads: the statements
behind :class:`~tenure.store.eventlog.EventLog` and
:class:`~tenure.store.operating.Operating`, each run on a connection the backend
gives (a write transaction for the writes)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from datetime import datetime

from tenure.clock import from_epoch, to_epoch
from tenure.store.backend import EventRead, GroupTally
from tenure.store.sqlite import rows
from tenure.store.sqlite.schema import Q
from tenure.store.types import Event, EventPage, QueueStats, Report
from tenure.task import Status


def read_events(conn: sqlite3.Connection, after: int, limit: int) -> EventRead:
    """A page after the event id ``after``, and how far retention has pruned.
    Writers are serialised, so nothing is ever held back."""
    found = conn.execute(Q["list_events"], {"after": after, "limit": limit}).fetchall()
    events = [rows.event(row) for row in found if row["id"] is not None]
    return EventRead(EventPage(events), (0, found[0]["pruned_id"]))


def prune_events(conn: sqlite3.Connection, cutoff: float, limit: int) -> int:
    """Delete up to ``limit`` events older than ``cutoff`` and remember the
    newest id deleted; how many were deleted."""
    gone = [row[0] for row in conn.execute(Q["prune_events"], {"cutoff": cutoff, "limit": limit})]
    if gone:
        conn.execute(Q["mark_events_pruned"], {"pruned_id": max(gone)})
    return len(gone)


def save_report(conn: sqlite3.Connection, report: Report, now: float) -> Report | None:
    row = conn.execute(Q["report_save"], rows.report_params(report, now)).fetchone()
    return None if row is None else rows.report(row)


def get_report(conn: sqlite3.Connection, key: str) -> Report | None:
    row = conn.execute(Q["report_get"], {"key": key}).fetchone()
    return None if row is None else rows.report(row)


def list_reports(conn: sqlite3.Connection) -> list[Report]:
    return [rows.report(row) for row in conn.execute(Q["report_list"])]


def prune_reports(conn: sqlite3.Connection, cutoff: float) -> int:
    deleted: int = conn.execute(Q["prune_reports"], {"cutoff": cutoff}).rowcount
    return deleted


def task_events(conn: sqlite3.Connection, task_id: str) -> list[Event]:
    return [rows.event(row) for row in conn.execute(Q["list_task_events"], {"task_id": task_id})]


def task_stats(conn: sqlite3.Connection, now: datetime, since: datetime) -> QueueStats:
    """The queue at a glance: three reads, each its own snapshot (a figure may
    be a moment newer than another; SQLite's writers wait on none of them)."""
    counts = per_topic(conn.execute(Q["stats_counts"]))
    waiting = conn.execute(Q["stats_oldest_pending"], {"now": to_epoch(now)})
    oldest = {row["topic"]: from_epoch(row["since"]) for row in waiting}
    endings = per_topic(conn.execute(Q["stats_endings"], {"since": to_epoch(since)}))
    return QueueStats(now, since, counts, oldest, endings)


def task_rates(
    conn: sqlite3.Connection, since: datetime, until: datetime, topic: str | None
) -> dict[datetime, dict[Status, int]]:
    """Per minute start, how many tasks entered each status, from the events."""
    params = {"since": to_epoch(since), "until": to_epoch(until), "topic": topic}
    entered: dict[datetime, dict[Status, int]] = {}
    for row in conn.execute(Q["task_rates"], params):
        entered.setdefault(from_epoch(row["minute"]), {})[Status(row["status"])] = row["count"]
    return entered


def task_groups(conn: sqlite3.Connection, limit: int, scan: int) -> list[GroupTally]:
    """Per recent group and status, its tasks and their earliest creation."""
    found = conn.execute(Q["task_groups"], {"limit": limit, "scan": scan})
    return [
        (row["group_id"], Status(row["status"]), row["count"], from_epoch(row["created_at"]))
        for row in found
    ]


def transition_totals(conn: sqlite3.Connection) -> dict[str, dict[Status, int]]:
    return per_topic(conn.execute(Q["transition_totals"]))


def per_topic(found: Iterable[sqlite3.Row]) -> dict[str, dict[Status, int]]:
    """Rows of (topic, status, count) as counts per topic and status."""
    counts: dict[str, dict[Status, int]] = {}
    for row in found:
        counts.setdefault(row["topic"], {})[Status(row["status"])] = row["count"]
    return counts
